"""Every path of the engine on generic and on re-planned plans, beside each other: the paths other benchmarks skip.

    python -m benchmarks.plan_paths [--rows 10000] [--heavy 6] [--rounds 200] [--database-url DSN] [--json FILE]

The service forces generic plans (store/pool.py); ``benchmarks.plan_cache`` times the search statement and the
stores under both modes. A statement whose generic plan is bad can hide elsewhere: a search with hops = 2 ran
60 ms on its generic plan until its second hop was rewritten (store/search_links.py). This runs every read and
write path of ``MemoryEngine`` through two engines, one per ``plan_cache_mode``, alternating which goes first, on
established players (loadtest.seed: ~100 to ~2,000 memories each) and ``--heavy`` players of 6,000 memories (not
asked), every memory linked to the next and the seventh next of its scope, and every other player saved and
loaded once, so that their reads go through the timeline view's branches. Caller vectors throughout: the model is
not what is compared. Printed: p50 per path and mode, the ratio, and each path against the plain search on the
same mode — a plan bad under both modes shows there. A generic plan follows the table's statistics: run it with
``--heavy 0`` too (the hops = 2 plan above showed on 10,000 rows without heavy players, 11x the plain search,
and not with them).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from npc_memory.domain.model import ContentType, MemoryFilter, NewMemory, Scope, SearchQuery, Speaker, Subject, Weights
from npc_memory.engine import MemoryEngine
from npc_memory.server.runtime import database_url, open_engine

from benchmarks.plan_cache import HEAVY_ROWS, MODES
from benchmarks.search_speed import LINK_SCOPES
from benchmarks.write import bench_config, percentiles, run_main
from loadtest.pool import Pool, load_pool
from loadtest.seed import seed

SAVE_ID = "slot-1"
IDS_PER_SCOPE = 50
SCOPE_IDS = "SELECT id FROM user_memories WHERE user_id = %s AND heroine_id = %s ORDER BY id LIMIT %s"


@dataclass(frozen=True)
class Ask:
    """One round's request: a scope, one of its memories, a pool question and passage."""

    scope: Scope
    memory_id: UUID
    question: int
    passage: int
    tag: str


EnginePath = Callable[[MemoryEngine, Ask, Pool], Awaitable[Any]]


def _query(a: Ask, pool: Pool, **fields: Any) -> SearchQuery:
    return SearchQuery(scope=a.scope, text=pool.queries[a.question], limit=10, weights=Weights(),
                       now=datetime.now(UTC), embedding=pool.query_vectors[a.question], **fields)


def _fact(a: Ask, pool: Pool) -> NewMemory:
    return NewMemory(Speaker.USER, Subject.USER, "user", ContentType.FACT,
                     f"{pool.passages[a.passage]} ({a.tag})", embedding=pool.passage_vectors[a.passage])


PATHS: dict[str, EnginePath] = {
    "search": lambda e, a, p: e.search(_query(a, p)),
    "search, hops 1": lambda e, a, p: e.search(_query(a, p, hops=1)),
    "search, hops 2": lambda e, a, p: e.search(_query(a, p, hops=2)),
    "search with shared memories": lambda e, a, p: e.search(_query(a, p, include_shared=True)),
    "search, deepen": lambda e, a, p: e.search_deep(_query(a, p)),
    "list a page": lambda e, a, p: e.list_page(a.scope, MemoryFilter(), False, 50, None),
    "list a page, filtered": lambda e, a, p: e.list_page(
        a.scope, MemoryFilter(subjects=(Subject.USER,), min_importance=3), False, 50, None),
    "get": lambda e, a, p: e.get(a.scope, a.memory_id),
    "a subject's history": lambda e, a, p: e.history(a.scope, "user", None, 50, None),
    "a memory's version chain": lambda e, a, p: e.chain(a.scope, a.memory_id, 20, None),
    "a memory's links": lambda e, a, p: e.links(a.scope, a.memory_id),
    "the heroine's context (profile)": lambda e, a, p: e.build_context(a.scope, "", 800, False, "ko",
                                                                        datetime.now(UTC)),
    "store one fact": lambda e, a, p: e.store(a.scope, [_fact(a, p)]),
    "expand a memory": lambda e, a, p: e.expand(a.scope, a.memory_id),
    "list save points": lambda e, a, p: e.list_save_points(a.scope.user_id),
}


async def prepare(engine: MemoryEngine, scopes: list[Scope]) -> dict[Scope, list[UUID]]:
    """Link every memory to two others, save and load every other player; some memory ids of each scope."""
    async with engine.db.connection() as conn:
        await conn.execute(LINK_SCOPES)
        await conn.execute("ANALYZE")
    saved: set[str] = set()
    for scope in scopes[::2]:
        if scope.user_id not in saved:
            await engine.create_save_point(scope.user_id, SAVE_ID)
            await engine.load_save_point(scope.user_id, SAVE_ID)
            saved.add(scope.user_id)
    ids: dict[Scope, list[UUID]] = {}
    async with engine.db.connection() as conn:
        for scope in scopes:
            cur = await conn.execute(SCOPE_IDS, (scope.user_id, scope.heroine_id, IDS_PER_SCOPE))
            ids[scope] = [r["id"] for r in await cur.fetchall()]
    return ids


async def measure(engines: dict[str, MemoryEngine], ids: dict[Scope, list[UUID]], rounds: int,
                  rng: random.Random) -> dict[str, dict[str, float]]:
    """Every path once per round and mode, on one round's request; milliseconds per path and mode."""
    pool = load_pool()
    scopes = [s for s, found in ids.items() if found]
    samples: dict[str, list[float]] = {f"{m} {p}": [] for m in engines for p in PATHS}
    for r in range(rounds + 5):
        scope = rng.choice(scopes)
        ask = Ask(scope, rng.choice(ids[scope]), rng.randrange(len(pool.queries)), rng.randrange(len(pool.passages)),
                  f"r{r}")
        for name, path in PATHS.items():
            for mode in MODES if r % 2 else MODES[::-1]:
                started = time.perf_counter()
                await path(engines[mode], replace(ask, tag=f"{ask.tag}-{mode}"), pool)
                if r >= 5:  # each connection's first executions: PostgreSQL decides its plans there
                    samples[f"{mode} {name}"].append((time.perf_counter() - started) * 1000)
    return {k: percentiles(v) for k, v in samples.items()}


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    """Seed, link and save; open one engine per mode; measure."""
    config = bench_config(args)
    config = replace(config, embedding=replace(config.embedding, query_cache_size=0),
                     write=replace(config.write, tokenize_processes=0))
    async with database_url(config.database) as url:
        seeded = await asyncio.to_thread(seed, url, args.rows, progress=False)
        if args.heavy:
            await asyncio.to_thread(seed, url, args.heavy * HEAVY_ROWS, prefix="heavy", low=HEAVY_ROWS,
                                    high=HEAVY_ROWS, progress=False, migrate_first=False)
        database = replace(config.database, url=url, pool_min=1, pool_max=1)
        async with open_engine(replace(config, database=replace(database, plan_cache_mode=MODES[0]))) as first, \
                open_engine(replace(config, database=replace(database, plan_cache_mode=MODES[1]))) as second:
            ids = await prepare(first, [Scope(s.user_id, s.heroine_id) for s in seeded])
            timings = await measure(dict(zip(MODES, (first, second), strict=True)), ids, args.rounds,
                                    random.Random(9))
    return {"timings": timings, "rows": args.rows, "scopes": len(seeded), "heavy": args.heavy,
            "rounds": args.rounds}


def show(s: dict[str, Any]) -> None:
    """Print the table."""
    print(f"{s['rows']:,} rows in {s['scopes']} scopes, {s['heavy']} heavy players of {HEAVY_ROWS:,}; "
          f"{s['rounds']} rounds, every path once per round and mode\n")
    print(f"| path | {MODES[0]} p50 / p95 ms | {MODES[1]} p50 / p95 ms | {MODES[1]} / {MODES[0]} p50 | "
          f"{MODES[1]} p50 / its plain search's |")
    print("|---|---|---|---:|---:|")
    search = s["timings"][f"{MODES[1]} search"]["p50"]
    for name in PATHS:
        a, g = s["timings"][f"{MODES[0]} {name}"], s["timings"][f"{MODES[1]} {name}"]
        print(f"| {name} | {a['p50']:.2f} / {a['p95']:.2f} | {g['p50']:.2f} / {g['p95']:.2f} | "
              f"{g['p50'] / a['p50']:.2f}x | {g['p50'] / search:.2f}x |")


def main() -> None:
    """Parse options, run, print, optionally write JSON."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--rows", type=int, default=10000, help="memories of the players asked")
    parser.add_argument("--heavy", type=int, default=6, help="players of 6,000 memories, not asked")
    parser.add_argument("--rounds", type=int, default=200, help="requests per path and mode")
    run_main(parser, main_async, show)


if __name__ == "__main__":
    main()
