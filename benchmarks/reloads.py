"""A player who reloads before every choice, or who saved long ago, beside one who never saves: the everyday calls.

    python -m benchmarks.reloads [--reloads 300] [--rows 1500] [--rounds 160] [--saved-once] [--dated]
                                 [--database-url DSN] [--json out]

In this process: the service's engine on a fresh embedded PostgreSQL (or ``--database-url``). Two players of the
same heroine hold the same ``--rows`` facts (caller vectors), written over ``--reloads`` days. The reloader, each
day after its facts, saves to one quick slot, makes one choice (a fact) and loads the quick save, as a player who
did not like the answer does: each load makes a timeline one deeper, and the choice stays behind on the abandoned
one. ``--saved-once``: the other player instead saves once before day 1 and plays on; each day both players also
set the heroine's "호감도" slot (closing the day before's) and raise one fact's importance, so the saved player's
closes and raises pile up as change entries (two a day) while the other's are made in place. ``--dated``: every
line carries its moment (noon of its day), as a game on the game clock sends it. Then ``--rounds`` rounds, the two
players in a shuffled order each round, each player storing a new fact, searching (the question's vector and text),
listing its first page of 20 and getting one memory. Printed: p50 / p95 / mean of each call per player and the
reloader's ratio to the other's p50. ``PYTHONPATH=DIR/service`` runs an earlier tree's engine (``git archive COMMIT
| tar -x -C DIR``).
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from npc_memory.domain.model import (
    ContentType,
    MemoryFilter,
    NewMemory,
    Scope,
    SearchQuery,
    Speaker,
    Subject,
    Weights,
)
from npc_memory.embedding.base import normalise
from npc_memory.engine import MemoryEngine, utcnow
from npc_memory.server.runtime import open_engine

from benchmarks.write import bench_config, percentiles, print_latencies, run_main

T0 = datetime(2026, 1, 1, 12, tzinfo=UTC)
SETTLE = 20
"""Rounds left out at the start (connections, prepared statements, held scopes)."""
PLACES = ("바다", "산", "시장", "도서관", "성", "숲")
CALLS = ("store", "search", "list", "get")


def _moment(args: argparse.Namespace, day: int) -> datetime | None:
    """A line's moment on the game clock with ``--dated`` (noon of the day), else none (the time of the store)."""
    return T0 + timedelta(days=day) if args.dated else None


async def _fill(engine: MemoryEngine, players: dict[str, Scope], args: argparse.Namespace,
                vector: Callable[[], np.ndarray]) -> dict[str, list[Any]]:
    """The same facts for both players, day by day; the reloader's save, choice and load each day."""
    days = max(args.reloads, 1)
    per_day = max(1, args.rows // days)
    ids: dict[str, list[Any]] = {name: [] for name in players}
    if args.saved_once:
        await engine.create_save_point(players["reloader"].user_id, "start")
    for day in range(days):
        texts = [f"{day}일째 {j}번 이야기: 레티아와 {PLACES[(day + j) % len(PLACES)]}에 갔다" for j in range(per_day)]
        for name, scope in players.items():
            facts = [NewMemory(Speaker.USER, Subject.USER, "user", ContentType.FACT, t, embedding=vector(),
                               valid_at=_moment(args, day)) for t in texts]
            ids[name] += [r.memory_id for r in await engine.store(scope, facts)]
            if args.saved_once:
                affection = NewMemory(Speaker.HEROINE, Subject.HEROINE, "letia", ContentType.FACT,
                                      f"호감도는 {day}이다", slot="affection", embedding=vector(),
                                      valid_at=_moment(args, day))
                await engine.store(scope, [affection])
                await engine.update(scope, ids[name][-1], importance=9)
            elif name == "reloader" and args.reloads:
                await engine.create_save_point(scope.user_id, "quick")
                choice = NewMemory(Speaker.USER, Subject.USER, "user", ContentType.FACT,
                                   f"{day}일째의 선택: 마음에 들지 않아 다시 불러옴", embedding=vector())
                await engine.store(scope, [choice])
                await engine.load_save_point(scope.user_id, "quick")
    return ids


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Fill both players, then time each call of each round."""
    rng = np.random.default_rng(1)

    def vector() -> np.ndarray:
        return normalise(rng.standard_normal((1, 384)))[0]

    async with open_engine(bench_config(args)) as engine:
        players = {name: Scope(f"reloads-{name}", "letia") for name in ("plain", "reloader")}
        started = time.perf_counter()
        ids = await _fill(engine, players, args, vector)
        built_s = time.perf_counter() - started
        async with engine.db.connection() as conn:
            await conn.execute("ANALYZE")
        samples: dict[str, dict[str, list[float]]] = {c: {n: [] for n in players} for c in CALLS}
        for i in range(args.rounds + SETTLE):
            order = list(players.items())
            random.Random(i).shuffle(order)
            for name, scope in order:
                fact = NewMemory(Speaker.USER, Subject.USER, "user", ContentType.FACT, f"새로운 이야기 {i}",
                                 embedding=vector(), valid_at=_moment(args, args.reloads + i))
                query = SearchQuery(scope=scope, text="레티아와 바다에 갔던 날", limit=10, weights=Weights(),
                                    now=utcnow(), embedding=vector())
                memory_id = ids[name][i % len(ids[name])]
                calls: dict[str, Awaitable[Any]] = {  # coroutines: each starts when awaited, in this order
                    "store": engine.store(scope, [fact]),
                    "search": engine.search(query),
                    "list": engine.list_page(scope, MemoryFilter(), False, 20, None),
                    "get": engine.get(scope, memory_id),
                }
                for call, pending in calls.items():
                    start = time.perf_counter()
                    await pending
                    if i >= SETTLE:
                        samples[call][name].append((time.perf_counter() - start) * 1000)
        async with engine.db.connection() as conn:
            cur = await conn.execute("SELECT timeline_id FROM player_state WHERE user_id = %s",
                                     (players["reloader"].user_id,))
            live = await cur.fetchone()
    return {"reloads": args.reloads, "saved_once": args.saved_once, "dated": args.dated, "rows": args.rows,
            "rounds": args.rounds, "build_seconds": round(built_s, 1),
            "reloader_live_timeline": live["timeline_id"] if live else 1,
            "calls": {c: {n: percentiles(ms) for n, ms in by.items()} for c, by in samples.items()}}


def show(result: dict[str, Any]) -> None:
    """One table of the two players' calls, and the reloader's ratio to the plain player's p50."""
    if result.get("saved_once"):
        print(f"a player who saved once before {result['reloads']} days of slot sets and raises (the 'reloader' rows)"
              f" beside one who never saved, {result['rows']} facts each (caller vectors, in-process)\n")
    else:
        print(f"a player {result['reloads']} loads deep (live timeline {result['reloader_live_timeline']}) beside one"
              f" who never saved, {result['rows']} facts each (caller vectors, in-process)\n")
    rows = {f"{call} {name}": s for call, by in result["calls"].items() for name, s in by.items()}
    print_latencies("call player", rows)
    print()
    for call, by in result["calls"].items():
        print(f"{call:<8} reloader / plain p50: {by['reloader']['p50'] / by['plain']['p50']:.2f}x")


def main() -> None:
    """Parse, measure, print."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--reloads", type=int, default=300, help="days, each ending in a save and a load")
    parser.add_argument("--rows", type=int, default=1500, help="facts each player holds")
    parser.add_argument("--rounds", type=int, default=160, help="measured rounds")
    parser.add_argument("--dated", action="store_true",
                        help="every line carries its moment (valid_at: noon of its day), as a game on the game clock")
    parser.add_argument("--saved-once", action="store_true",
                        help="the other player saves once before day 1 instead of reloading; both set a slot and"
                             " raise a fact each day")
    run_main(parser, measure, show)


if __name__ == "__main__":
    main()
