"""The server's event loop: the standard asyncio loop beside uvloop, CPU per search and throughput, in one run.

    python -m benchmarks.event_loop [--rows 10000] [--rounds 3] [--clients 4] [--seconds 8] [--lone 200]

Uses (and seeds on first use) the database of ``benchmarks.search_speed`` at that scale. Each round starts one
``npc-memory serve`` per loop (``NPC_MEMORY_EVENT_LOOP`` asyncio, then uvloop; the order flips every round so
slow drift of the shared machine falls on both), times ``--lone`` caller-vector searches from one client one
after another, then saturates the server with ``--clients`` threads for ``--seconds``: requests/s, latency,
and the server process's CPU ms per search (psutil user + system; PostgreSQL's CPU is not in it).
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
from functools import partial
from pathlib import Path
from typing import Any

from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc

from benchmarks.search_speed import ensure_seeded, plan
from benchmarks.search_speed_load import saturate, search_request
from benchmarks.search_speed_parts import percentiles, served_process, timed
from loadtest.pool import load_pool

LOOPS = ("asyncio", "uvloop")
BASELINE = "asyncio"


def one_round(url: str, folder: Path, loop: str, asks: list[Any], args: argparse.Namespace) -> dict[str, Any]:
    """One server on ``loop``: lone caller-vector latency, then the saturated figures."""
    env = {"NPC_MEMORY_EVENT_LOOP": loop, "NPC_MEMORY_EMBEDDING_THREADS": "0", "NPC_MEMORY_QUERY_CACHE_SIZE": "0"}
    with served_process(url, folder / f"event-loop-{loop}.log", env=env) as (channel, pid):
        stub = svc_grpc.MemoryServiceStub(channel)
        for a in asks[:50]:  # warm-up: prepared statements, pool connections
            stub.SearchMemories(search_request(a, True))
        lone = timed([partial(stub.SearchMemories, search_request(a, True)) for a in asks[:args.lone]])
        load = saturate(stub, lambda i: search_request(asks[i % len(asks)], True), pid, args.clients, args.seconds)
    return {"lone": percentiles(lone), "rps": load["rps"], "cpu_ms": load["cpu_ms_per_request"],
            "latency": load["latency"]}


def main() -> None:
    """Seed if needed, alternate the two loops for ``--rounds``, print medians of the rounds and the ratios."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--data-dir", type=Path, default=Path(tempfile.gettempdir()) / "npc-memory-speed")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--lone", type=int, default=200)
    args = parser.parse_args()
    folder = args.data_dir / str(args.rows)
    pg, scopes = ensure_seeded(folder, args.rows, load_pool())
    asks = plan(random.Random(5), scopes, load_pool(), 400)
    rounds: dict[str, list[dict[str, Any]]] = {loop: [] for loop in LOOPS}
    try:
        for r in range(args.rounds):
            for loop in LOOPS if r % 2 == 0 else LOOPS[::-1]:
                got = one_round(pg.url, folder, loop, asks, args)
                rounds[loop].append(got)
                print(f"round {r + 1} {loop}: lone p50 {got['lone']['p50']:.2f} ms, {got['rps']:.0f} req/s, "
                      f"CPU {got['cpu_ms']:.2f} ms per search", flush=True)
    finally:
        pg.stop()

    def med(loop: str, pick: str) -> float:
        return float(statistics.median(
            r["lone"][pick.split(".")[1]] if pick.startswith("lone.") else r[pick] for r in rounds[loop]))

    print(f"\nmedian of {args.rounds} rounds, {args.clients} clients saturating, {args.lone} lone searches per round\n")
    print("| event loop | lone p50 ms | lone p95 ms | saturated req/s | server CPU ms per search |")
    print("|---|---:|---:|---:|---:|")
    for loop in LOOPS:
        print(f"| {loop} | {med(loop, 'lone.p50'):.2f} | {med(loop, 'lone.p95'):.2f} | {med(loop, 'rps'):.0f} | "
              f"{med(loop, 'cpu_ms'):.2f} |")
    print(f"| uvloop / {BASELINE} | {med('uvloop', 'lone.p50') / med(BASELINE, 'lone.p50'):.2f}x | "
          f"{med('uvloop', 'lone.p95') / med(BASELINE, 'lone.p95'):.2f}x | "
          f"{med('uvloop', 'rps') / med(BASELINE, 'rps'):.2f}x | "
          f"{med('uvloop', 'cpu_ms') / med(BASELINE, 'cpu_ms'):.2f}x |")


if __name__ == "__main__":
    main()
