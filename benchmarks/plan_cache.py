"""Generic or custom plans: searches and stores when a few heavy players and many small ones share a table.

    python -m benchmarks.plan_cache [--rows 4000] [--new-players 40] [--heavy 6] [--stores 150] [--requests 2000]
                                    [--new-share 0.33] [--vector-only-share 0.25] [--warmup 30] [--first mix|new]
                                    [--database-url DSN] [--json FILE]

Every statement is prepared once per pooled connection. Under PostgreSQL's ``plan_cache_mode = auto`` a prepared
statement is planned again on every execution (a custom plan) unless its generic plan's estimated cost is no
higher than the average custom plan's; the service sets ``force_generic_plan`` (store/pool.py).

The database holds established players (loadtest.seed: scopes of ~100 to ~2,000 memories), ``--new-players``
players with 0 to 20 memories (rows copied from the seeded ones) and ``--heavy`` players of 6,000 memories whose
searches are not timed: a few heavy players raise the table's rows per player, which is what a generic plan's
estimate goes by, so the custom plans of everyone else look cheaper. The service's search
(``store.search.search_ranked``: a question's vector and terms, as a text search runs after its embedding) runs
through two of the service's pools of one connection each, one per mode, for the same requests, alternating
which goes first. ``--new-share`` of the requests go to new players; ``--vector-only-share`` search by a caller's
vector alone (no terms: no keyword side, a statement of its own, as the load test's scoring path).

The ``--warmup`` requests are the first each connection serves, and PostgreSQL decides on a statement's first
five executions: ``--first new`` sends them all to new players (a connection opened while new players were
searching; a pool opens connections as load grows and replaces each after an hour), ``mix`` draws them like the
rest. Printed: p50 / p95 / mean per mode and kind of request, the ratios, and how many executions of the search
statements each connection ran on the generic plan and how many it planned again.

Then ``--stores`` single stores with the caller's vector and six stores of 32 facts run through two engines (the
service's write path, one pool connection each, one per mode) into scopes of 300 memories each, interleaved.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import psycopg
from npc_memory.config import Config, SearchConfig
from npc_memory.domain import dialogue
from npc_memory.domain.model import Scope, SearchQuery, Weights
from npc_memory.engine import MemoryEngine
from npc_memory.server.runtime import database_url, open_engine
from npc_memory.store import search as store_search
from npc_memory.store.pool import Database, PlanCacheMode, PoolSettings
from npc_memory.text import Tokenizer

from benchmarks.write import bench_config, fact, percentiles, run_main, texts, timed
from benchmarks.write import seed as seed_scope
from loadtest.pool import load_pool
from loadtest.seed import ScopeInfo, recorded_options, seed

MODES: tuple[PlanCacheMode, ...] = ("auto", "force_generic_plan")
NEW_PREFIX = "new-"
MAX_NEW_ROWS = 20
HEAVY_ROWS = 6000
STORE_KINDS = ("single store, caller vector", "store of 32, caller vectors")
STORE_SCOPE_ROWS = 300
STORE_BATCHES = 6
KINDS = ("new players, text", "new players, vector only", "established, text", "established, vector only")

COPY_ROWS = """
INSERT INTO user_memories
SELECT (jsonb_populate_record(m, jsonb_build_object('id', gen_random_uuid(), 'user_id', %(new_user)s::text))).*
FROM user_memories m
WHERE m.user_id = %(user_id)s AND m.heroine_id = %(heroine_id)s AND m.superseded_by IS NULL LIMIT %(rows)s
"""

PLAN_COUNTS = """
SELECT COALESCE(sum(generic_plans), 0) AS generic, COALESCE(sum(custom_plans), 0) AS custom
FROM pg_prepared_statements WHERE statement LIKE '%scope_rows%'
"""


def add_new_players(url: str, scopes: list[ScopeInfo], count: int, rng: random.Random) -> list[ScopeInfo]:
    """``count`` players with 0 to ``MAX_NEW_ROWS`` memories, copied from seeded scopes."""
    out = []
    with psycopg.connect(url, autocommit=True) as conn:
        for i in range(count):
            source = rng.choice(scopes)
            rows = 0 if i % 4 == 0 else rng.randint(1, MAX_NEW_ROWS)
            new = ScopeInfo(f"{NEW_PREFIX}{i:04d}", source.heroine_id, rows)
            conn.execute(COPY_ROWS, {"new_user": new.user_id, "user_id": source.user_id,
                                     "heroine_id": source.heroine_id, "rows": rows})
            out.append(new)
        conn.execute("ANALYZE user_memories")
    return out


async def plan_counts(db: Database) -> tuple[int, int]:
    """Generic and custom plans made for the search statements on the pool's one connection."""
    async with db.connection() as conn:
        row = await (await conn.execute(PLAN_COUNTS)).fetchone()
    assert row is not None
    return int(row["generic"]), int(row["custom"])


async def measure(url: str, established: list[ScopeInfo], new: list[ScopeInfo], args: argparse.Namespace,
                  rng: random.Random) -> dict[str, Any]:
    """Both pools over the same requests; milliseconds per mode and kind, and the plan counts."""
    pool = load_pool()
    tokenizer = Tokenizer(options=recorded_options(url))
    per_side = SearchConfig().candidates
    dbs = {m: Database(url, PoolSettings(min_size=1, max_size=1, plan_cache_mode=m)) for m in MODES}
    samples: dict[str, list[float]] = {f"{m} {k}": [] for m in MODES for k in KINDS}
    try:
        for db in dbs.values():
            await db.open()
        for i in range(args.requests + args.warmup):
            warming = i < args.warmup
            fresh = (warming and args.first == "new") or rng.random() < args.new_share
            vector_only = rng.random() < args.vector_only_share
            kind = KINDS[2 * (not fresh) + vector_only]
            scope = rng.choice(new if fresh else established)
            q = rng.randrange(len(pool.queries))
            query = SearchQuery(scope=Scope(scope.user_id, scope.heroine_id), text=pool.queries[q],
                                limit=10 * dialogue.REPEAT_HEADROOM, weights=Weights(), now=datetime.now(UTC),
                                embedding=pool.query_vectors[q])
            terms = [] if vector_only else tokenizer.query_terms(query.text)
            order = MODES if i % 2 else MODES[::-1]
            for mode in order:
                start = time.perf_counter()
                await store_search.search_ranked(dbs[mode], query, terms, per_side, "bm25")
                if not warming:
                    samples[f"{mode} {kind}"].append((time.perf_counter() - start) * 1000)
        plans = {m: await plan_counts(db) for m, db in dbs.items()}
    finally:
        for db in dbs.values():
            await db.close()
    return {"timings": {k: percentiles(v) for k, v in samples.items()}, "plans": plans}


async def measure_stores(config: Config, url: str, stores: int) -> dict[str, Any]:
    """Single and 32-fact stores with caller vectors through one engine per mode, interleaved; milliseconds."""
    database = replace(config.database, url=url, pool_min=1, pool_max=1)
    samples: dict[str, list[float]] = {f"{m} {k}": [] for m in MODES for k in STORE_KINDS}
    async with open_engine(replace(config, database=replace(database, plan_cache_mode=MODES[0]))) as first, \
            open_engine(replace(config, database=replace(database, plan_cache_mode=MODES[1]))) as second:
        engines: dict[PlanCacheMode, MemoryEngine] = dict(zip(MODES, (first, second), strict=True))
        scopes = {m: Scope(f"store-{m}", "letia") for m in MODES}
        for mode, engine in engines.items():
            await seed_scope(engine, scopes[mode], STORE_SCOPE_ROWS)
        singles = texts(stores, "벡")
        batches = [texts(32, f"벡배{b}-") for b in range(STORE_BATCHES)]
        vectors = await first.embedder.embed_passages(singles + [t for b in batches for t in b])
        facts = [fact(i, c, v) for i, (c, v) in enumerate(zip(singles + [t for b in batches for t in b], vectors,
                                                              strict=True))]
        requests = [(STORE_KINDS[0], facts[i:i + 1]) for i in range(stores)] + [
            (STORE_KINDS[1], facts[stores + 32 * b:stores + 32 * (b + 1)]) for b in range(STORE_BATCHES)]
        for i, (kind, batch) in enumerate(requests):
            for mode in MODES if i % 2 else MODES[::-1]:
                samples[f"{mode} {kind}"].append(
                    await timed(lambda m=mode, b=batch: engines[m].store(scopes[m], b)))  # type: ignore[misc]
    return {k: percentiles(v) for k, v in samples.items()}


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    """Seed a fresh database with established and new players; measure."""
    config = bench_config(args)
    rng = random.Random(5)
    async with database_url(config.database) as url:
        established = await asyncio.to_thread(seed, url, args.rows, progress=False)
        if args.heavy:
            await asyncio.to_thread(seed, url, args.heavy * HEAVY_ROWS, prefix="heavy", low=HEAVY_ROWS,
                                    high=HEAVY_ROWS, progress=False, migrate_first=False)
        new = await asyncio.to_thread(add_new_players, url, established, args.new_players, rng)
        summary = await measure(url, established, new, args, rng)
        if args.stores:
            summary["stores"] = await measure_stores(config, url, args.stores)
    summary |= {"rows": args.rows, "established": len(established), "new": len(new), "new_share": args.new_share,
                "vector_only_share": args.vector_only_share,
                "first": args.first, "heavy": args.heavy}
    return summary


def show(s: dict[str, Any]) -> None:
    """Print the table."""
    print(f"search statement, {s['rows']:,} rows in {s['established']} established scopes, {s['new']} new "
          f"players' (0-{MAX_NEW_ROWS} rows), {s['heavy']} heavy players' ({HEAVY_ROWS:,} rows each); "
          f"{s['new_share']:.0%} of requests to new players, "
          f"{s['vector_only_share']:.0%} by a vector alone; each connection's first requests: {s['first']}\n")
    print("| requests to | auto p50 / p95 / mean ms | force_generic_plan p50 / p95 / mean ms | generic / auto p50 |")
    print("|---|---|---|---:|")
    for kind in KINDS:
        a, g = s["timings"][f"auto {kind}"], s["timings"][f"force_generic_plan {kind}"]
        print(f"| {kind} | {a['p50']:.2f} / {a['p95']:.2f} / {a['mean']:.2f} | "
              f"{g['p50']:.2f} / {g['p95']:.2f} / {g['mean']:.2f} | {g['p50'] / a['p50']:.2f}x |")
    for kind in STORE_KINDS if "stores" in s else ():
        a, g = s["stores"][f"auto {kind}"], s["stores"][f"force_generic_plan {kind}"]
        print(f"| {kind} | {a['p50']:.2f} / {a['p95']:.2f} / {a['mean']:.2f} | "
              f"{g['p50']:.2f} / {g['p95']:.2f} / {g['mean']:.2f} | {g['p50'] / a['p50']:.2f}x |")
    for mode, (generic, custom) in s["plans"].items():
        print(f"\n{mode}: {generic} executions on a generic plan, {custom} planned again (custom)", end="")
    print()


def main() -> None:
    """Parse options, run, print, optionally write JSON."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--rows", type=int, default=4000, help="memories of established players")
    parser.add_argument("--new-players", type=int, default=40, help="players with 0 to 20 memories")
    parser.add_argument("--requests", type=int, default=2000, help="searches timed per mode")
    parser.add_argument("--warmup", type=int, default=30, help="searches per mode before timing")
    parser.add_argument("--stores", type=int, default=150, help="single stores per mode (0: no stores)")
    parser.add_argument("--heavy", type=int, default=6, help="players of 6,000 memories, not searched")
    parser.add_argument("--new-share", type=float, default=0.33, help="share of requests to new players")
    parser.add_argument("--vector-only-share", type=float, default=0.25, help="share of searches without terms")
    parser.add_argument("--first", choices=("mix", "new"), default="mix",
                        help="whom the warm-up requests (each connection's first) go to")
    run_main(parser, main_async, show)


if __name__ == "__main__":
    main()
