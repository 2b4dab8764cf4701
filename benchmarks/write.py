"""Write-path benchmark: single and batch stores beside the embedder alone, on the same texts, in one run.

    python -m benchmarks.write [--facts 200] [--batches 10] [--scope-rows 300] [--embedding-threads 0]
                               [--database-url DSN] [--json out]

Each measured store is preceded by the embedder alone on the same text(s), so both see the same machine load
(the machine is shared; interleaving keeps the comparison fair). The engine is the service's own
(MemoryEngine.store: duplicate check, slot supersession, insert, one transaction), on a real PostgreSQL: the
embedded server unless a DSN is given. Also measured: the same stores with caller-supplied vectors, which is the
store's own cost (SQL and planning) without the model. A quarter of the facts set a slot that already holds a
value, so the conflict path runs too.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, get_args

from npc_memory.config import Config, DatabaseConfig
from npc_memory.config.database import PlanCacheMode
from npc_memory.domain.model import ContentType, NewMemory, Scope, Speaker, Subject
from npc_memory.embedding.settings import EmbeddingSettings
from npc_memory.engine import MemoryEngine
from npc_memory.server.runtime import open_engine

from loadtest.korean import ANIMALS, FOODS, HOBBIES, PLACES, obj

SLOTS = ("favorite_food", "favorite_animal", "hobby", "home")


def texts(n: int, salt: str) -> list[str]:
    """``n`` distinct Korean facts of the game's kind."""
    out = []
    for i in range(n):
        food, animal = FOODS[i % len(FOODS)], ANIMALS[(i // 3) % len(ANIMALS)]
        place, hobby = PLACES[(i // 7) % len(PLACES)], HOBBIES[(i // 5) % len(HOBBIES)]
        kind = i % 4
        if kind == 0:
            out.append(f"{salt}{i}일째 {place}에서 {obj(food)} 같이 먹었음")
        elif kind == 1:
            out.append(f"{salt}{i}번째 산책에서 {obj(animal)} 봤다고 함")
        elif kind == 2:
            out.append(f"{salt}{i}일째 {hobby} 이야기를 오래 했음")
        else:
            out.append(f"{salt}{i}일째 {obj(food)} 제일 좋아한다고 말함")
    return out


def fact(i: int, content: str, vector: Any = None) -> NewMemory:
    """Every fourth fact sets a slot (a conflict with the slot's current value)."""
    slot = SLOTS[(i // 4) % len(SLOTS)] if i % 4 == 3 else None
    return NewMemory(Speaker.USER, Subject.USER, "user", ContentType.PREFERENCE, content, slot=slot,
                     importance=1 + i % 9, embedding=vector)


def percentiles(ms: Sequence[float]) -> dict[str, float]:
    """p50/p95/p99 and mean of a sample in milliseconds (a sample of one is every percentile)."""
    q = statistics.quantiles(ms, n=100, method="inclusive") if len(ms) > 1 else [ms[0]] * 99
    return {"p50": q[49], "p95": q[94], "p99": q[98], "mean": statistics.fmean(ms), "n": len(ms)}


def print_latencies(title: str, rows: Mapping[str, Mapping[str, float]], width: int = 26) -> None:
    """A p50 / p95 / mean table: one line per named sample of ``percentiles``."""
    print(f"{title:<{width}}{'p50 ms':>9}{'p95 ms':>9}{'mean ms':>9}")
    for name, r in rows.items():
        print(f"{name:<{width}}{r['p50']:>9.2f}{r['p95']:>9.2f}{r['mean']:>9.2f}")


async def timed(call: Callable[[], Awaitable[Any]]) -> float:
    """Milliseconds one call takes."""
    start = time.perf_counter()
    await call()
    return (time.perf_counter() - start) * 1000


async def seed(engine: MemoryEngine, scope: Scope, rows: int) -> None:
    """Fill the scope with ``rows`` memories (a played-in heroine), slots included, and analyse the table."""
    contents = texts(rows, "시드")
    vectors = await engine.embedder.embed_passages(contents)
    facts = [fact(i, c, v) for i, (c, v) in enumerate(zip(contents, vectors, strict=True))]
    for start in range(0, rows, 128):
        await engine.store(scope, facts[start:start + 128])
    await analyse(engine)


async def analyse(engine: MemoryEngine) -> None:
    """Statistics as autovacuum would leave them (pooled statements are planned again once they change)."""
    async with engine.db.connection() as conn:
        await conn.execute("ANALYZE user_memories")


async def run(engine: MemoryEngine, n_single: int, n_batches: int, scope_rows: int) -> dict[str, Any]:
    """Interleaved measurements; returns the summary."""
    scope = Scope(f"bench-{uuid.uuid4().hex[:8]}", "letia")
    await seed(engine, scope, scope_rows)
    embed = engine.embedder
    samples: dict[str, list[float]] = {k: [] for k in (
        "embed_single", "store_single", "store_single_vectors", "embed_batch", "store_batch", "store_batch_vectors")}
    singles = texts(n_single, "한")
    for i, content in enumerate(singles):
        samples["embed_single"].append(await timed(lambda c=content: embed.embed_passages([c])))  # type: ignore[misc]
        samples["store_single"].append(await timed(lambda i=i, c=content: engine.store(scope, [fact(i, c)])))  # type: ignore[misc]
    vector_texts = texts(n_single, "벡")
    vectors = await embed.embed_passages(vector_texts)
    for i, (content, vector) in enumerate(zip(vector_texts, vectors, strict=True)):
        samples["store_single_vectors"].append(
            await timed(lambda i=i, c=content, v=vector: engine.store(scope, [fact(i, c, v)])))  # type: ignore[misc]
    for b in range(n_batches):
        batch = texts(32, f"배{b}-")
        samples["embed_batch"].append(await timed(lambda t=batch: embed.embed_passages(t)))  # type: ignore[misc]
        samples["store_batch"].append(
            await timed(lambda t=batch: engine.store(scope, [fact(i, c) for i, c in enumerate(t)])))  # type: ignore[misc]
        vbatch = texts(32, f"벡배{b}-")
        vvecs = await embed.embed_passages(vbatch)
        samples["store_batch_vectors"].append(await timed(lambda t=vbatch, vs=vvecs: engine.store(  # type: ignore[misc]
            scope, [fact(i, c, v) for i, (c, v) in enumerate(zip(t, vs, strict=True))])))
    summary: dict[str, Any] = {name: percentiles(ms) for name, ms in samples.items()}
    for name in ("embed_batch", "store_batch", "store_batch_vectors"):
        summary[name]["facts_per_s"] = 32 * 1000 / summary[name]["mean"]
    for name in ("embed_single", "store_single", "store_single_vectors"):
        summary[name]["facts_per_s"] = 1000 / summary[name]["mean"]
    summary["store_minus_embed_p50_ms"] = summary["store_single"]["p50"] - summary["embed_single"]["p50"]
    summary["store_over_embed_p50"] = summary["store_single"]["p50"] / summary["embed_single"]["p50"]
    summary["batch_store_over_embed_p50"] = summary["store_batch"]["p50"] / summary["embed_batch"]["p50"]
    summary["scope_rows"] = scope_rows
    summary["omp_num_threads"] = os.environ.get("OMP_NUM_THREADS", "")
    summary["cpus"] = os.cpu_count()
    return summary


def show(s: dict[str, Any]) -> None:
    """Print the table."""
    print(f"write benchmark: {s['cpus']} CPU(s), embedding.threads={s['embedding_threads']}, "
          f"OMP_NUM_THREADS={s['omp_num_threads'] or 'unset'}, "
          f"scope pre-filled with {s['scope_rows']} memories\n")
    print(f"{'':<34}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}{'facts/s':>9}")
    labels = [
        ("embed_single", "embedder alone, 1 text"),
        ("store_single", "store 1 fact (embeds)"),
        ("store_single_vectors", "store 1 fact, caller vector"),
        ("embed_batch", "embedder alone, 32 texts"),
        ("store_batch", "store 32 facts (embeds)"),
        ("store_batch_vectors", "store 32 facts, caller vectors"),
    ]
    for key, label in labels:
        r = s[key]
        print(f"{label:<34}{r['p50']:>9.2f}{r['p95']:>9.2f}{r['p99']:>9.2f}{r['facts_per_s']:>9.0f}")
    print(f"\nsingle store p50 - embedder p50: {s['store_minus_embed_p50_ms']:+.2f} ms "
          f"(ratio {s['store_over_embed_p50']:.2f}); batch-32 ratio {s['batch_store_over_embed_p50']:.2f}")


def bench_config(args: argparse.Namespace) -> Config:
    """The defaults on ``--database-url``, or on an embedded PostgreSQL in a fresh directory."""
    database = DatabaseConfig(url=args.database_url or None, data_dir=Path(tempfile.mkdtemp(prefix="npc-bench-")),
                              pool_min=1, pool_max=4, plan_cache_mode=args.plan_cache_mode)
    config = replace(Config(), database=database)
    threads = getattr(args, "embedding_threads", None)
    return config if threads is None else replace(config, embedding=replace(config.embedding, threads=threads))


def run_main(parser: argparse.ArgumentParser,
             measure: Callable[[argparse.Namespace], Coroutine[Any, Any, dict[str, Any]]],
             show_summary: Callable[[dict[str, Any]], None]) -> None:
    """Add ``--database-url``, ``--plan-cache-mode`` and ``--json`` to ``parser``; parse, measure, print, write."""
    parser.add_argument("--database-url", dest="database_url", help="PostgreSQL DSN; default: embedded")
    parser.add_argument("--plan-cache-mode", default=DatabaseConfig.plan_cache_mode, choices=get_args(PlanCacheMode),
                        help="the pool's plan_cache_mode (default: the service's)")
    parser.add_argument("--json", help="write the summary here")
    args = parser.parse_args()
    summary = asyncio.run(measure(args))
    show_summary(summary)
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=2), encoding="utf-8")


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    """Start the database (embedded in a fresh directory unless a URL is given) and the engine, run, clean up."""
    config = bench_config(args)
    if args.duplicate_threshold is not None:
        config = replace(config, write=replace(config.write, duplicate_threshold=args.duplicate_threshold))
    async with open_engine(config) as engine:
        await engine.store(Scope("bench-warmup", "letia"), [fact(0, "준비 운동")])
        summary = await run(engine, args.facts, args.batches, args.scope_rows)
    summary["embedding_threads"] = config.embedding.threads
    return summary


def main() -> None:
    """Parse options, run, print, optionally write JSON."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--facts", type=int, default=200, help="single stores measured (each also embedded alone)")
    parser.add_argument("--batches", type=int, default=10, help="batches of 32 measured")
    parser.add_argument("--scope-rows", dest="scope_rows", type=int, default=300, help="memories already in scope")
    parser.add_argument("--embedding-threads", type=int, default=EmbeddingSettings().threads,
                        help="the model's embedding.threads (1: one core per call; 0: by load)")
    parser.add_argument("--duplicate-threshold", dest="duplicate_threshold", type=float,
                        help="override the configured threshold (to compare with older code)")
    run_main(parser, main_async, show)


if __name__ == "__main__":
    main()
