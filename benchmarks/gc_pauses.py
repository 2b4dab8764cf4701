"""Python's garbage collections in a serving process, with and without what lives long frozen (``gc.freeze``).

    python -m benchmarks.gc_pauses [--rows 10000] [--searches 3000] [--rounds 2] [--json out.json]

A fresh embedded PostgreSQL is seeded with ``--rows`` memories (loadtest.seed: scopes of ~100 to ~2,000 rows, real
e5 vectors). Then, in turns, the service's engine and gRPC server run in this process: every scope is searched
once and read to hold, then (every second round) everything alive is frozen, and a client in another process
sends ``--searches`` searches (a question's text and its vector, random scopes) one after another. The client
times each call; this process times every collection by generation (``gc.callbacks``). The service itself does
not freeze: this measures whether it should.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import sys
import time
from dataclasses import replace
from typing import Any

import numpy as np
from npc_memory.config import Config
from npc_memory.domain.model import Scope
from npc_memory.server import create_server
from npc_memory.server.runtime import database_url, open_engine

from benchmarks.search_speed_parts import percentiles
from benchmarks.write import bench_config
from loadtest.seed import ScopeInfo, seed

CLIENT = r"""
import grpc, json, random, sys, time
from loadtest.pool import load_pool
from npc_memory_client.v1 import memory_pb2 as pb, memory_service_pb2 as svc, memory_service_pb2_grpc as g
port, scopes, n, each = int(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "each"
pool, rng = load_pool(), random.Random(3)
stub = g.MemoryServiceStub(grpc.insecure_channel(f"127.0.0.1:{port}"))
ms = []
for i in range(n):
    (user_id, heroine_id), q = scopes[i] if each else rng.choice(scopes), rng.randrange(len(pool.queries))
    request = svc.SearchMemoriesRequest(scope=pb.Scope(user_id=user_id, heroine_id=heroine_id), query=pool.queries[q],
                                        query_embedding=[float(x) for x in pool.query_vectors[q]], limit=10)
    started = time.perf_counter()
    stub.SearchMemories(request)
    ms.append((time.perf_counter() - started) * 1000.0)
print(json.dumps(ms))
"""


class Collections:
    """Every collection's generation and milliseconds while installed."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, float]] = []
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        """The collector's callback: a collection starts or stops."""
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.seen.append((int(info["generation"]), (time.perf_counter() - self._started) * 1000.0))

    def by_generation(self) -> dict[str, dict[str, float]]:
        """Count, longest and total milliseconds per generation."""
        out = {}
        for gen in (0, 1, 2):
            ms = [m for g, m in self.seen if g == gen]
            out[f"gen{gen}"] = {"count": len(ms), "max_ms": max(ms, default=0.0), "total_ms": sum(ms)}
        return out


async def client(port: int, scopes: list[ScopeInfo], searches: int, each: bool = False) -> list[float]:
    """The client process's latencies in milliseconds (``each``: every scope once, in order)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", CLIENT, str(port), json.dumps([[s.user_id, s.heroine_id] for s in scopes]),
        str(len(scopes) if each else searches), "each" if each else "random", stdout=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    out, _ = await proc.communicate()
    return [float(x) for x in json.loads(out)]


async def one_round(config: Config, scopes: list[ScopeInfo], searches: int, freeze: bool) -> dict[str, Any]:
    """Serve, hold every scope, freeze or not, then time the client's searches and the collections."""
    gc.unfreeze()
    async with open_engine(config) as engine:
        server, port, _ = await create_server(engine, "127.0.0.1:0")
        await server.start()
        await client(port, scopes, 0, each=True)  # every scope searched once: read to hold
        if engine.scope_cache is not None:
            for s in scopes:
                await engine.scope_cache.loaded(Scope(s.user_id, s.heroine_id))
        if freeze:
            gc.collect()
            gc.freeze()
        watched = Collections()
        gc.callbacks.append(watched)
        try:
            ms = await client(port, scopes, searches)
        finally:
            gc.callbacks.remove(watched)
            await server.stop(0)
    latency = percentiles(ms) | {"p999": float(np.percentile(ms, 99.9)), "max": max(ms)}
    return {"frozen_after_warm_up": freeze, "latency_ms": latency, "frozen": gc.get_freeze_count(),
            "collections": watched.by_generation()}


async def main_async(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Seed, then alternate rounds not frozen and frozen."""
    config = bench_config(argparse.Namespace(database_url=None, plan_cache_mode="force_generic_plan"))
    config = replace(config, write=replace(config.write, tokenize_processes=0))
    async with database_url(config.database) as url:
        scopes = await asyncio.to_thread(seed, url, args.rows, progress=False)
        config = replace(config, database=replace(config.database, url=url))
        return [await one_round(config, scopes, args.searches, freeze)
                for _ in range(args.rounds) for freeze in (False, True)]


def main() -> None:
    """Parse, run, print a row per round, optionally write JSON."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--searches", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=2, help="pairs of rounds, not frozen then frozen")
    parser.add_argument("--json", help="write the rounds here")
    args = parser.parse_args()
    rounds = asyncio.run(main_async(args))
    print("| frozen after warm-up | p50 ms | p99 ms | p99.9 ms | max ms | gen0 n / max ms | gen1 n / max ms "
          "| gen2 n / max ms |")
    print("|---|---:|---:|---:|---:|---|---|---|")
    for r in rounds:
        lat, col = r["latency_ms"], r["collections"]
        cells = [f"{col[g]['count']} / {col[g]['max_ms']:.2f}" for g in ("gen0", "gen1", "gen2")]
        frozen = "yes" if r["frozen_after_warm_up"] else "no"
        print(f"| {frozen} | {lat['p50']:.2f} | {lat['p99']:.2f} | {lat['p999']:.2f} | {lat['max']:.2f} | "
              + " | ".join(cells) + " |")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(rounds, fh, indent=1)


if __name__ == "__main__":
    main()
