"""Throughput of ``npc-memory serve --workers N``: the same saturated load against 1 and 2 worker processes.

    python -m benchmarks.workers [--seconds 15] [--clients 8] [--workers 1 --workers 2]

An embedded PostgreSQL in a temporary directory gets 10 scopes of 50 memories (stored through the service),
then for each worker count ``--clients`` threads search for ``--seconds``: text queries the server embeds
(distinct, so the query cache never answers) and, separately, caller-vector queries (no embedder). Printed:
requests per second, p50/p95 in ms, and each throughput as a ratio to the first worker count's.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from npc_memory.store.embedded import EmbeddedPostgres
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc

from benchmarks.search_speed_load import saturate
from benchmarks.search_speed_parts import served

WORDS = ["비", "바다", "고양이", "커피", "시험", "여름", "축제", "편지", "노래", "산책", "도서관", "케이크"]
SCOPES = [f"bench-workers-{i}" for i in range(10)]


def seed(stub: svc_grpc.MemoryServiceStub) -> None:
    """50 memories in each scope, embedded by the server."""
    for user in SCOPES:
        request = svc.StoreMemoriesRequest()
        request.scope.user_id, request.scope.heroine_id = user, "letia"
        for i in range(50):
            a, b = WORDS[i % len(WORDS)], WORDS[(i * 7 + 3) % len(WORDS)]
            request.memories.add(content=f"{user}의 기억 {i}: {a}와 {b}를 좋아한다고 말했다", importance=5,
                                 speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER)
        stub.StoreMemories(request, timeout=300)


def main() -> None:
    """Run the comparison and print one table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--workers", type=int, action="append")
    args = parser.parse_args()
    counts = args.workers or [1, 2]
    with tempfile.TemporaryDirectory(prefix="bench-workers-") as tmp:
        pg = EmbeddedPostgres(Path(tmp) / "pg")
        try:
            rows: list[tuple[int, str, float, dict[str, float]]] = []
            # A fixed unit vector: the statement's work does not depend on which vector is asked.
            vector = [((i * 37) % 19 - 9) / 9.0 for i in range(384)]
            norm = sum(v * v for v in vector) ** 0.5
            vector = [v / norm for v in vector]
            seeded = False
            for n in counts:
                with served(pg.url, Path(tmp) / f"serve-{n}.log", ("--workers", str(n))) as channel:
                    stub = svc_grpc.MemoryServiceStub(channel)
                    if not seeded:
                        seed(stub)
                        seeded = True

                    def text(i: int) -> svc.SearchMemoriesRequest:
                        r = svc.SearchMemoriesRequest(query=f"{WORDS[i % 12]} {WORDS[i // 12 % 12]} {i}", limit=10)
                        r.scope.user_id, r.scope.heroine_id = SCOPES[i % 10], "letia"
                        return r

                    def by_vector(i: int) -> svc.SearchMemoriesRequest:
                        r = svc.SearchMemoriesRequest(query_embedding=vector, limit=10)
                        r.scope.user_id, r.scope.heroine_id = SCOPES[i % 10], "letia"
                        return r

                    saturate(stub, by_vector, None, args.clients, 2.0)  # warm every worker's pool and plans
                    for name, make in (("text", text), ("vector", by_vector)):
                        load = saturate(stub, make, None, args.clients, args.seconds)
                        rps, pct = load["rps"], load["latency"]
                        rows.append((n, name, rps, pct))
        finally:
            pg.stop()
    base = {name: rps for n, name, rps, _ in rows if n == counts[0]}
    print(f"{'workers':>7} {'query':>7} {'req/s':>8} {'p50 ms':>8} {'p95 ms':>8} {'x base':>7}")
    for n, name, rps, pct in rows:
        print(f"{n:>7} {name:>7} {rps:>8.1f} {pct['p50']:>8.1f} {pct['p95']:>8.1f} {rps / base[name]:>7.2f}")


if __name__ == "__main__":
    main()
