"""Search speed at scale: gRPC latency (caller vectors, server-side embedding), the embedder alone, bare SQL, recall.

    python -m benchmarks.search_speed --rows 10000 --rows 100000 [--rows 1000000] [--embedding-threads 0]
                                      [--json out.json]

For each scale: an embedded PostgreSQL in --data-dir/<rows> is seeded once with binary COPY (loadtest.seed:
scopes of ~100 to ~2,000 memories; vectors are real e5 embeddings of a pool of generated Korean sentences,
since embedding a million texts on 2 cores would take hours), then ``npc-memory serve`` runs in its own
process and one client sends requests one at a time. Reported side by side, in ms: search over gRPC with
the caller's query vector; search over gRPC with the server embedding each (distinct, uncached) question;
the service's local embedder alone (same thread setting) on the same questions; the service's statement run
bare through psycopg (the floor); and the share of the exact top-10 (a plain scan) a relevance-only search
returns.

Links: before timing, every memory is linked (RELATED_TO) to two others of its scope, so a search with
``hops`` has links to follow. The same caller-vector requests are then timed with hops = 1, hops = 2 and
``deepen`` (up to three tier searches), each printed beside hops = 0 of the same run as a p50 ratio.

At the first scale it also measures where players feel speed (benchmarks/search_speed_load.py) and ends with the
speed targets, each met or missed with where its time went in this run (benchmarks/search_speed_targets.py): the
server's own /metrics, a health check, and a py-spy profile of the saturated server's event-loop thread.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import psycopg
from grpc_health.v1 import health_pb2, health_pb2_grpc
from npc_memory.embedding.local import LocalE5Embedder
from npc_memory.embedding.settings import EmbeddingSettings
from npc_memory.store.embedded import EmbeddedPostgres
from npc_memory.text import Tokenizer
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc

from benchmarks.search_speed_load import (
    THREAD_SETTINGS,
    ensure_common_scopes,
    measure_common,
    per_setting,
    report_load,
)
from benchmarks.search_speed_parts import (
    Ask,
    BareSql,
    distinct_questions,
    free_port,
    percentiles,
    served_process,
    tie_aware_recall,
    timed,
)
from benchmarks.search_speed_targets import report_targets
from loadtest.pool import Pool, load_pool
from loadtest.seed import read_manifest, seed, write_manifest

PER_SIDE = 50


@dataclass(frozen=True)
class LoadOptions:
    """How the per-setting runs load the server: client threads, seconds per saturated run, single stores."""

    clients: int = 8
    seconds: float = 10.0
    stores: int = 100


async def lone(embedder: LocalE5Embedder, texts: Sequence[str]) -> list[float]:
    """One caller, one question at a time: milliseconds each."""
    out = []
    for text in texts:
        start = time.perf_counter()
        await embedder.embed_queries([text])
        out.append((time.perf_counter() - start) * 1000.0)
    return out


async def embedder_alone(threads: int, texts: list[str]) -> list[float]:
    """The service's local embedder with the server's thread setting, one question at a time (no cache)."""
    embedder = LocalE5Embedder(threads)
    try:
        await lone(embedder, texts[:5])  # warm-up
        return await lone(embedder, texts)
    finally:
        await embedder.aclose()


def ensure_seeded(folder: Path, rows: int, pool: Pool) -> tuple[EmbeddedPostgres, list[tuple[str, str, int]]]:
    """The embedded server of this scale, seeded on first use (binary COPY) and vacuumed."""
    pg = EmbeddedPostgres(folder)
    manifest = folder / "manifest.json"
    if not manifest.exists():
        started = time.perf_counter()
        scopes = seed(pg.url, rows, prefix=f"speed{rows}", pool=pool, progress=False)
        with psycopg.connect(pg.url, autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE user_memories")
        write_manifest(manifest, scopes)
        print(f"seeded {rows:,} rows in {time.perf_counter() - started:.0f}s", file=sys.stderr)
    return pg, [(s.user_id, s.heroine_id, s.rows) for s in read_manifest(manifest)]


# Each memory → the 1st and 7th next of its scope by id: two links per memory, a graph with paths of many hops.
LINK_SCOPES = """
INSERT INTO memory_links (user_id, heroine_id, from_id, to_id, kind, depth, via)
SELECT user_id, heroine_id, id, next_id, 'related_to', 0, '' FROM (
    SELECT m.user_id, m.heroine_id, m.id,
           lead(m.id, v.k) OVER (PARTITION BY m.user_id, m.heroine_id, v.k ORDER BY m.id) AS next_id
    FROM user_memories m CROSS JOIN (VALUES (1), (7)) v(k)
) x
WHERE next_id IS NOT NULL
ON CONFLICT DO NOTHING
"""


def ensure_linked(url: str) -> None:
    """Give every memory two links once (after the server's start-up migrated the schema)."""
    with psycopg.connect(url, autocommit=True) as conn:
        if conn.execute("SELECT NOT EXISTS (SELECT 1 FROM memory_links)").fetchone() == (True,):
            conn.execute(LINK_SCOPES)
            conn.execute("VACUUM ANALYZE memory_links")


LINKED_VARIANTS: dict[str, dict[str, Any]] = {
    "grpc_hops_1": {"hops": 1}, "grpc_hops_2": {"hops": 2}, "grpc_deepen": {"deepen": True},
}
"""The link and tier measurements: request fields added to the caller-vector search."""


def plan(rng: random.Random, scopes: list[tuple[str, str, int]], pool: Pool, n: int) -> list[Ask]:
    """``n`` requests: a random scope each, a pool question with its real query vector."""
    out = []
    for _ in range(n):
        user_id, heroine_id, _size = rng.choice(scopes)
        i = rng.randrange(len(pool.queries))
        out.append(Ask(user_id, heroine_id, pool.queries[i], pool.query_vectors[i]))
    return out


def _request(ask: Ask, with_vector: bool, **kw: Any) -> svc.SearchMemoriesRequest:
    req = svc.SearchMemoriesRequest(scope=pb.Scope(user_id=ask.user_id, heroine_id=ask.heroine_id), **kw)
    if with_vector:
        req.query_embedding.extend(ask.vector.tolist())
    return req


def run_scale(folder: Path, rows: int, pool: Pool, queries: int, seed_value: int, threads: int,
              load: LoadOptions | None = None) -> dict[str, Any]:
    """Every measurement at one scale; with ``load``, the common-word scopes and the per-setting runs too."""
    rng = random.Random(seed_value)
    pg, scopes = ensure_seeded(folder, rows, pool)
    tok = Tokenizer()
    common = ensure_common_scopes(pg.url, pool, tok) if load else []
    asks = plan(rng, scopes, pool, queries)
    texts = distinct_questions(pool.queries)
    rng.shuffle(texts)
    texts = texts[:queries]
    text_asks = [Ask(a.user_id, a.heroine_id, t, a.vector) for a, t in zip(plan(rng, scopes, pool, len(texts)),
                                                                           texts, strict=True)]
    out: dict[str, Any] = {"rows": rows, "scopes": len(scopes), "queries": len(asks)}
    try:
        metrics_port = free_port()
        with served_process(pg.url, folder / "server.log", env={"NPC_MEMORY_METRICS_PORT": str(metrics_port)}
                            ) as (channel, _pid):
            stub = svc_grpc.MemoryServiceStub(channel)
            calls = [_request(a, True, query=a.text) for a in asks]
            for req in calls[:50]:  # warm-up: connections, prepared statements, caches
                stub.SearchMemories(req)
            out["grpc_caller_vector"] = percentiles(timed([partial(stub.SearchMemories, r) for r in calls]))
            if load:
                health = health_pb2_grpc.HealthStub(channel)
                out["common"] = measure_common(stub, pg.url, common, pool, tok, queries, PER_SIDE, rng, metrics_port,
                                               partial(health.Check, health_pb2.HealthCheckRequest()))
            ensure_linked(pg.url)
            for name, fields in LINKED_VARIANTS.items():
                variant = [_request(a, True, query=a.text, **fields) for a in asks]
                for req in variant[:20]:
                    stub.SearchMemories(req)
                out[name] = percentiles(timed([partial(stub.SearchMemories, r) for r in variant]))
            out["grpc_hops_0_again"] = percentiles(timed([partial(stub.SearchMemories, r) for r in calls]))
            text_calls = [_request(a, False, query=a.text) for a in text_asks]
            out["grpc_server_embedding"] = percentiles(
                timed([partial(stub.SearchMemories, r) for r in text_calls]))
            recall_asks = asks[:100]
            returned = [[r.memory.memory_id for r in stub.SearchMemories(
                _request(a, True, weights=pb.Weights(relevance=1.0))).results] for a in recall_asks]
        out["embedder_alone"] = percentiles(asyncio.run(embedder_alone(threads, [a.text for a in text_asks])))
        bare = BareSql(pg.url, PER_SIDE)
        requests = [bare.request(a, tok.terms(a.text)) for a in asks]
        for r in requests[:50]:
            bare.run(r)
        out["sql_bare"] = percentiles(timed([partial(bare.run, r) for r in requests]))
        out["recall_at_10"] = sum(tie_aware_recall(ids, bare.cosines(a))
                                  for ids, a in zip(returned, recall_asks, strict=True)) / len(recall_asks)
        bare.close()
        if load:
            passages = [p for p in pool.passages if p not in pool.queries][:load.stores]
            out["settings"] = [per_setting(pg.url, folder, t, texts, asks, passages, load.clients, load.seconds)
                               for t in THREAD_SETTINGS]
    finally:
        pg.stop()
    g, s, e = out["grpc_caller_vector"], out["sql_bare"], out["embedder_alone"]
    out["ratio_grpc_to_sql_p50"] = g["p50"] / s["p50"]
    out["server_embedding_p50_minus_embedder_p50"] = out["grpc_server_embedding"]["p50"] - e["p50"]
    return out


def report(results: list[dict[str, Any]]) -> str:
    """The markdown table of the run."""
    lines = ["| rows | scopes | gRPC, caller vector p50/p95/p99 | gRPC, server embeds p50/p95/p99 | "
             "embedder alone p50/p95 | bare SQL p50/p95/p99 | gRPC/SQL p50 | recall@10 vs exact |",
             "|---:|---:|---|---|---|---|---:|---:|"]
    for r in results:
        def f(key: str, cols: tuple[str, ...] = ("p50", "p95", "p99"), r: dict[str, Any] = r) -> str:
            return " / ".join(f"{r[key][c]:.2f}" for c in cols)
        lines.append(f"| {r['rows']:,} | {r['scopes']:,} | {f('grpc_caller_vector')} | "
                     f"{f('grpc_server_embedding')} | {f('embedder_alone', ('p50', 'p95'))} | {f('sql_bare')} | "
                     f"{r['ratio_grpc_to_sql_p50']:.1f}x | {r['recall_at_10']:.1%} |")
    lines += ["", "| rows | hops=0 p50/p95 | hops=0 again p50/p95 | hops=1 p50/p95 (x) | hops=2 p50/p95 (x) | "
              "deepen p50/p95 (x) |", "|---:|---|---|---|---|---|"]
    for r in results:
        def g(key: str, r: dict[str, Any] = r) -> str:
            base = (r["grpc_caller_vector"]["p50"] + r["grpc_hops_0_again"]["p50"]) / 2
            ratio = f" ({r[key]['p50'] / base:.2f}x)" if key in LINKED_VARIANTS else ""
            return f"{r[key]['p50']:.2f} / {r[key]['p95']:.2f}{ratio}"
        lines.append(f"| {r['rows']:,} | {g('grpc_caller_vector')} | {g('grpc_hops_0_again')} | "
                     f"{g('grpc_hops_1')} | {g('grpc_hops_2')} | {g('grpc_deepen')} |")
    return "\n".join(lines)


def main() -> None:
    """Parse options, run every scale, print the table (and JSON)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, action="append", help="a scale to run (repeatable); default 10k, 100k")
    parser.add_argument("--queries", type=int, default=400, help="timed requests per measurement")
    parser.add_argument("--data-dir", type=Path, default=Path(tempfile.gettempdir()) / "npc-memory-speed",
                        help="one embedded PostgreSQL per scale lives here (kept, so a rerun skips seeding)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--embedding-threads", type=int, default=EmbeddingSettings().threads,
                        help="the server's embedding.threads (1: one core per call; 0: every core for a call alone, "
                             "one each when calls overlap); the embedder-alone column uses the same")
    parser.add_argument("--clients", type=int, default=LoadOptions.clients,
                        help="client threads of the saturated runs (first scale only)")
    parser.add_argument("--seconds", type=float, default=LoadOptions.seconds, help="length of each saturated run")
    parser.add_argument("--stores", type=int, default=LoadOptions.stores, help="single stores timed per setting")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    os.environ["NPC_MEMORY_EMBEDDING_THREADS"] = str(args.embedding_threads)  # read by the served process
    pool = load_pool()
    load = LoadOptions(args.clients, args.seconds, args.stores)
    results = [run_scale(args.data_dir / str(rows), rows, pool, args.queries, args.seed, args.embedding_threads,
                         load if i == 0 else None)
               for i, rows in enumerate(args.rows or [10_000, 100_000])]
    machine = f"{platform.machine()}, {platform.processor() or 'cpu'}, Python {platform.python_version()}"
    print(f"machine: {machine}\n")
    print(report(results))
    print(report_load(results[0]))
    print(report_targets(results[0]))
    if args.json:
        args.json.write_text(json.dumps({"machine": machine, "results": results}, indent=1) + "\n", "utf-8")


if __name__ == "__main__":
    main()
