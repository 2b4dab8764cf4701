"""What reading shared memories costs a search: a heroine's search with and without ``include_shared``.

    python -m benchmarks.sharing [--rows 2000] [--heroines 3] [--shared 0.2] [--searches 300] [--saved] [--json out]

Two players hold the same ``--rows`` memories with letia (caller vectors, the same texts):

- ``alone``: letia is the only heroine the player has spoken with;
- ``others``: the player also has ``--rows`` memories with each of ``--heroines`` - 1 other heroines, a share
  ``--shared`` of them stored as shared (visible to every heroine of the player when a read asks).

Three searches of letia's scope are timed, interleaved so all see the same machine load:
``alone`` (the baseline), ``others`` without ``include_shared`` (the other heroines' rows must cost nothing),
and ``others`` with ``include_shared`` (the predicate ``heroine_id = letia OR (include_shared AND
visibility = 'shared')`` also admits their shared rows). Each with the query text's keyword terms, through the
service's own MemoryEngine.search on a real PostgreSQL (embedded unless a DSN is given); ratios are to ``alone``.
``--saved``: both players save first, then ``--changed`` memories of each heroine change (change entries), so every
search reads the timeline view (held, or by the statement).
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
    Visibility,
    Weights,
)
from npc_memory.engine import MemoryEngine, utcnow
from npc_memory.server.runtime import open_engine

from benchmarks.harness import caller_vector_config, emit
from benchmarks.search_speed_parts import percentiles
from benchmarks.write import texts

DIM = 384
HEROINES = ("letia", "lupames", "roco", "mina", "yuna")
QUESTIONS = ("레티아가 좋아하는 음식", "같이 간 장소", "취미가 뭐였지", "동물을 좋아해")


def _vectors(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    unit: np.ndarray = v / np.linalg.norm(v, axis=1, keepdims=True)
    return unit


async def _fill(engine: MemoryEngine, scope: Scope, contents: list[str], shared: float, seed: int) -> None:
    """Store ``contents`` in the scope, a ``shared`` share of them as shared, 100 per request."""
    rng = np.random.default_rng(seed)
    vectors = _vectors(rng, len(contents))
    flags = rng.random(len(contents)) < shared
    for start in range(0, len(contents), 100):
        await engine.store(scope, [
            NewMemory(speaker=Speaker.USER, subject=Subject.USER, subject_id="user", content_type=ContentType.FACT,
                      content=c, importance=int(rng.integers(1, 10)), embedding=vectors[start + i],
                      visibility=Visibility.SHARED if flags[start + i] else Visibility.PRIVATE)
            for i, c in enumerate(contents[start:start + 100])
        ])


async def build(engine: MemoryEngine, rows: int, heroines: int, shared: float) -> dict[str, Scope]:
    """The two players of the module docstring; letia's rows are the same for both."""
    run = uuid.uuid4().hex[:8]
    alone, others = Scope(f"bench-alone-{run}", "letia"), Scope(f"bench-others-{run}", "letia")
    contents = texts(rows, run)
    await _fill(engine, alone, contents, 0.0, seed=1)
    await _fill(engine, others, contents, 0.0, seed=1)
    for k, heroine in enumerate(HEROINES[1:heroines], start=2):
        await _fill(engine, Scope(others.user_id, heroine), texts(rows, f"{run}-{heroine}"), shared, seed=k)
    return {"alone": alone, "others": others}


async def measure(engine: MemoryEngine, players: dict[str, Scope], searches: int) -> dict[str, list[float]]:
    """Milliseconds per search for the three cases, interleaved in a shuffled order per question."""
    cases = {"alone": (players["alone"], False), "others, private only": (players["others"], False),
             "others, include_shared": (players["others"], True)}
    rng = np.random.default_rng(7)
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for i in range(searches):
        question, vector = QUESTIONS[i % len(QUESTIONS)], _vectors(rng, 1)[0]
        order = list(cases.items())
        random.Random(i).shuffle(order)
        for name, (scope, include_shared) in order:
            query = SearchQuery(scope=scope, text=question, limit=10, weights=Weights(), now=utcnow(),
                                embedding=vector, include_shared=include_shared)
            start = time.perf_counter()
            await engine.search(query)
            samples[name].append((time.perf_counter() - start) * 1000)
    return samples


async def save(engine: MemoryEngine, players: dict[str, Scope], heroines: int, changed: int) -> None:
    """Both players save, then ``changed`` of each of their heroines' newest memories get a new importance."""
    for player in players.values():
        await engine.create_save_point(player.user_id, "bench")
        for heroine in HEROINES[:heroines]:
            scope = Scope(player.user_id, heroine)
            page, _ = await engine.list_page(scope, MemoryFilter(), False, changed, None)
            for m in page:
                await engine.update(scope, m.id, importance=m.importance % 9 + 1)


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    """Build the players, warm up, measure, summarise."""
    async with open_engine(caller_vector_config(args.database_url, DIM)) as engine:
        players = await build(engine, args.rows, args.heroines, args.shared)
        if args.saved:
            await save(engine, players, args.heroines, args.changed)
        async with engine.db.connection() as conn:
            await conn.execute("ANALYZE")
        await measure(engine, players, 20)  # warm-up: plans, caches
        samples = await measure(engine, players, args.searches)
    summary = {name: percentiles(ms) for name, ms in samples.items()}
    base = summary["alone"]
    return {
        "rows_per_heroine": args.rows, "heroines": args.heroines, "shared": args.shared, "searches": args.searches,
        "saved": args.saved, "changed_after_save": args.changed if args.saved else 0,
        "latency_ms": summary,
        "ratio_to_alone": {name: {k: round(s[k] / base[k], 2) for k in ("p50", "p95")} for name, s in summary.items()},
    }


def main() -> None:
    """Run the benchmark and print (or write) the summary."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=2000, help="memories per heroine")
    parser.add_argument("--heroines", type=int, default=3, choices=range(2, len(HEROINES) + 1))
    parser.add_argument("--shared", type=float, default=0.2, help="share of the other heroines' memories shared")
    parser.add_argument("--searches", type=int, default=300)
    parser.add_argument("--saved", action="store_true", help="both players save first, then memories change")
    parser.add_argument("--changed", type=int, default=50, help="with --saved: memories per heroine changed after")
    parser.add_argument("--database-url", default="")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    emit(asyncio.run(main_async(args)), args.json)


if __name__ == "__main__":
    main()
