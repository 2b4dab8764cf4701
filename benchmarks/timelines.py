"""Search latency on a player with 20 save points beside one with none, in the same run.

    python -m benchmarks.timelines [--rows 2000] [--saves 20] [--searches 300] [--changed 0.2] [--json out]

Three players hold the same memories (``--rows`` facts with caller vectors, written in 20 steps; after each
step a share ``--changed`` of that step's facts is changed: half invalidated, half raised in importance):

- ``plain``: never saves, so every change is made in place (the cheap case: no lineage, no change entries);
- ``saved``: saves after each step and immediately loads that save, so it ends on a timeline 20 deep, with
  20 save points, and every change after the first save is a per-timeline entry (memory_changes);
- ``branched``: like ``saved``, but before each load it also writes the step's facts again on the timeline it
  then abandons, so half the scope's physical rows belong to abandoned timelines the search must skip.

The engine is the service's own (MemoryEngine.search: one statement, view CTEs included), with a caller vector
and the query text's keyword terms, on a real PostgreSQL (the embedded server unless a DSN is given). Searches
are interleaved player by player so all three see the same machine load; the ratios are against ``plain``.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
import uuid
from pathlib import Path
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
from npc_memory.engine import MemoryEngine, utcnow
from npc_memory.server.runtime import open_engine

from benchmarks.harness import caller_vector_config, emit
from benchmarks.search_speed_parts import percentiles
from benchmarks.write import texts

DIM = 384
STEPS = 20
QUESTIONS = ("레티아가 좋아하는 음식", "같이 간 장소", "취미가 뭐였지", "동물을 좋아해")


def _vector(rng: np.random.Generator) -> np.ndarray:
    v = rng.standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


async def _write_step(
    engine: MemoryEngine, scope: Scope, contents: list[str], rng: np.random.Generator, changed: float
) -> None:
    """Store the step's facts, then invalidate half of a ``changed`` share and raise the other half."""
    ids = []
    for start in range(0, len(contents), 100):
        facts = [
            NewMemory(speaker=Speaker.USER, subject=Subject.USER, subject_id="user", content_type=ContentType.FACT,
                      content=c, importance=int(rng.integers(1, 10)), embedding=_vector(rng))
            for c in contents[start:start + 100]
        ]
        ids += [r.memory_id for r in await engine.store(scope, facts)]
    half = round(len(ids) * changed / 2)
    for memory_id in ids[:half]:
        await engine.invalidate(scope, memory_id, None)
    for memory_id in ids[half:2 * half]:
        await engine.update(scope, memory_id, importance=10)


async def build(engine: MemoryEngine, rows: int, saves: int, changed: float) -> dict[str, Scope]:
    """The three players of the module docstring."""
    run = uuid.uuid4().hex[:8]
    players = {name: Scope(f"bench-{name}-{run}", "letia") for name in ("plain", "saved", "branched")}
    per_step = rows // STEPS
    all_texts = texts(rows, run)
    for step in range(STEPS):
        contents = all_texts[step * per_step:(step + 1) * per_step]
        for name, scope in players.items():
            rng = np.random.default_rng(step)  # the same vectors and importances for every player
            await _write_step(engine, scope, contents, rng, changed)
            if name == "plain" or step >= saves:
                continue
            save_id = f"slot-{step}"
            await engine.create_save_point(scope.user_id, save_id)
            if name == "branched":
                await _write_step(engine, scope, [f"{c} (버려진 줄기)" for c in contents], rng, changed)
            await engine.load_save_point(scope.user_id, save_id)
    return players


async def measure(engine: MemoryEngine, players: dict[str, Scope], searches: int) -> dict[str, list[float]]:
    """Milliseconds per search, interleaved player by player."""
    rng = np.random.default_rng(7)
    samples: dict[str, list[float]] = {name: [] for name in players}
    for i in range(searches):
        question, vector = QUESTIONS[i % len(QUESTIONS)], _vector(rng)
        order = list(players.items())
        random.Random(i).shuffle(order)
        for name, scope in order:
            query = SearchQuery(scope=scope, text=question, limit=10, weights=Weights(), now=utcnow(),
                                embedding=vector)
            start = time.perf_counter()
            await engine.search(query)
            samples[name].append((time.perf_counter() - start) * 1000)
    return samples


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    """Build the players, warm up, measure, summarise."""
    async with open_engine(caller_vector_config(args.database_url, DIM)) as engine:
        started = time.perf_counter()
        players = await build(engine, args.rows, args.saves, args.changed)
        built_s = time.perf_counter() - started
        async with engine.db.connection() as conn:
            await conn.execute("ANALYZE")
        shape = {}
        for name, scope in players.items():
            async with engine.db.connection() as conn:
                cur = await conn.execute(
                    "SELECT (SELECT count(*) FROM user_memories WHERE user_id = %(u)s) AS physical,"
                    " (SELECT count(*) FROM memory_changes WHERE user_id = %(u)s) AS changes,"
                    " (SELECT count(*) FROM save_points WHERE user_id = %(u)s) AS saves,"
                    " (SELECT count(*) FROM timelines WHERE user_id = %(u)s) AS timelines,"
                    " (SELECT avg(pg_column_size(m.*))::float8 FROM user_memories m WHERE user_id = %(u)s)"
                    "   AS row_bytes,"
                    " (SELECT avg(pg_column_size(c.*))::float8 FROM memory_changes c WHERE user_id = %(u)s)"
                    "   AS change_bytes", {"u": scope.user_id})
                shape[name] = dict(await cur.fetchone() or {})
            visible, _ = await engine.list_page(scope, MemoryFilter(), False, 500, None)
            shape[name]["visible_first_page"] = len(visible)
        await measure(engine, players, 20)  # warm-up: plans, caches
        samples = await measure(engine, players, args.searches)
    summary = {name: percentiles(ms) for name, ms in samples.items()}
    base = summary["plain"]
    return {
        "rows": args.rows, "saves": args.saves, "searches": args.searches, "changed": args.changed,
        "build_seconds": round(built_s, 1),
        "players": shape, "latency_ms": summary,
        "ratio_to_plain": {name: {k: s[k] / base[k] for k in ("p50", "p95", "mean")} for name, s in summary.items()},
    }


def main() -> None:
    """Run the benchmark and print (or write) the summary."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--saves", type=int, default=20)
    parser.add_argument("--searches", type=int, default=300)
    parser.add_argument("--changed", type=float, default=0.2, help="share of each step's facts changed later")
    parser.add_argument("--database-url", default="")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    emit(asyncio.run(main_async(args)), args.json)


if __name__ == "__main__":
    main()
