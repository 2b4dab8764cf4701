"""A line the player says every day ("좋아해"), or a slot set every day, stored again: its cost beside a new line's.

    python -m benchmarks.repeated_lines [--days 300] [--stores 60] [--slot] [--saved] [--database-url DSN]
                                        [--json out]

In this process: the service's engine on a fresh embedded PostgreSQL (or ``--database-url``), one scope where the
player said "좋아해" once a day for ``--days`` days, each beside a new line (dialogue turns, tier source, caller
vectors: the store's own reads and writes, no model). Then ``--stores`` more days, each storing "좋아해" again and a
new line, alternating; printed: p50 / p95 / mean of each and the ratio. A turn is kept every day (it repeats only
itself at the same moment), so a read that brought every earlier one back to the planner grew with the days.
``--slot``: the heroine's "호감도" slot set to a new value every day instead (each a new version that supersedes the
last), beside a new fact of no slot. ``--saved``: the player saved once before day 1, so every version closed since
is a change entry (store/changes.py) rather than a close in place. ``PYTHONPATH=DIR/service`` runs an earlier
tree's engine (``git archive COMMIT | tar -x -C DIR``).
"""

from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from npc_memory.domain.model import ContentType, NewMemory, Scope, Speaker, Subject, Tier
from npc_memory.embedding.base import normalise
from npc_memory.server.runtime import open_engine

from benchmarks.write import bench_config, percentiles, print_latencies, run_main

T0 = datetime(2026, 1, 1, 12, tzinfo=UTC)
SETTLE = 10
"""Measured days left out at the start (connections, prepared statements)."""


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Fill the scope with ``--days`` days, then time the repeated and the new line of each further day."""
    rng = np.random.default_rng(1)

    def line(text: str, at: datetime, slot: str | None = None) -> NewMemory:
        vector = normalise(rng.standard_normal((1, 384)))[0]
        if slot is not None or args.slot:  # the heroine's facts: the slot's versions and the new facts beside them
            return NewMemory(Speaker.HEROINE, Subject.HEROINE, "letia", ContentType.FACT, text, slot=slot,
                             valid_at=at, embedding=vector)
        return NewMemory(Speaker.USER, Subject.USER, "user", ContentType.FACT, text, tier=Tier.SOURCE, valid_at=at,
                         embedding=vector)

    def repeated(day: int, at: datetime) -> NewMemory:
        return line(f"호감도는 {day}이다", at, "affection") if args.slot else line("좋아해", at)

    async with open_engine(bench_config(args)) as engine:
        scope = Scope("repeated-lines", "letia")
        if args.saved:
            await engine.create_save_point(scope.user_id, "start")
        for d in range(args.days):
            at = T0 + timedelta(days=d)
            await engine.store(scope, [repeated(d, at)])
            await engine.store(scope, [line(f"오늘은 {d}일째 날이야", at + timedelta(minutes=1))])
        async with engine.db.connection() as conn:
            await conn.execute("ANALYZE user_memories")
        samples: dict[str, list[float]] = {"repeated": [], "new": []}
        for i in range(args.stores + SETTLE):
            at = T0 + timedelta(days=args.days + i)
            later = at + timedelta(minutes=1)
            for name, fact in (("repeated", repeated(args.days + i, at)), ("new", line(f"새로운 말 {i}번", later))):
                started = time.perf_counter()
                await engine.store(scope, [fact])
                if i >= SETTLE:
                    samples[name].append((time.perf_counter() - started) * 1000)
    return {"days": args.days, "slot": args.slot, "saved": args.saved,
            **{name: percentiles(ms) for name, ms in samples.items()}}


def show(result: dict[str, Any]) -> None:
    """One line per kind of line, and the ratio."""
    what = "a slot set" if result.get("slot") else "a line said"
    saved = ", by a player who saved before day 1" if result.get("saved") else ""
    print(f"{what} on each of {result['days']} days{saved}, stored again (caller vectors, in-process)\n")
    print_latencies("line", {name: result[name] for name in ("repeated", "new")})
    print(f"\nrepeated / new p50: {result['repeated']['p50'] / result['new']['p50']:.2f}x")


def main() -> None:
    """Parse, measure, print."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--days", type=int, default=300, help="days the line was said before")
    parser.add_argument("--stores", type=int, default=60, help="measured days")
    parser.add_argument("--slot", action="store_true", help="a slot set every day instead of a line said every day")
    parser.add_argument("--saved", action="store_true",
                        help="the player saved once before day 1: each version closed since is a change entry")
    run_main(parser, measure, show)


if __name__ == "__main__":
    main()
