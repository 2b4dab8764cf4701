"""The server's event loop (or two versions of the code): CPU per search and throughput, side by side in one run.

    python -m benchmarks.event_loop [--rows 10000] [--rounds 3] [--clients 4] [--seconds 8] [--lone 200]
                                    [--before-src DIR]

Uses (and seeds on first use) the database of ``benchmarks.search_speed`` at that scale. Each round starts one
``npc-memory serve`` per loop (``NPC_MEMORY_EVENT_LOOP`` asyncio, then uvloop; the order flips every round so
slow drift of the shared machine falls on both), times ``--lone`` caller-vector searches from one client one
after another, then saturates the server with ``--clients`` threads for ``--seconds``: requests/s, latency,
and the server process's CPU ms per search (psutil user + system; PostgreSQL's CPU is not in it).
With ``--before-src DIR`` (an earlier checkout, e.g. ``git worktree add DIR <commit>``) the two servers are that
code and this one, both on uvloop: DIR/service is put first on the server's PYTHONPATH.
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
from benchmarks.search_speed_parts import before_pythonpath, percentiles, served_process, timed
from loadtest.pool import load_pool


def variants(before_src: Path | None) -> dict[str, dict[str, str]]:
    """The two servers' environments, the baseline first: the two loops, or the earlier code and this one."""
    common = {"NPC_MEMORY_EMBEDDING_THREADS": "0", "NPC_MEMORY_QUERY_CACHE_SIZE": "0"}
    if before_src is None:
        return {loop: {**common, "NPC_MEMORY_EVENT_LOOP": loop} for loop in ("asyncio", "uvloop")}
    return {"before": {**common, "NPC_MEMORY_EVENT_LOOP": "uvloop", "PYTHONPATH": before_pythonpath(before_src)},
            "after": {**common, "NPC_MEMORY_EVENT_LOOP": "uvloop"}}


def one_round(url: str, folder: Path, name: str, env: dict[str, str], asks: list[Any], args: argparse.Namespace,
              ) -> dict[str, Any]:
    """One server: lone caller-vector latency, then the saturated figures."""
    with served_process(url, folder / f"event-loop-{name}.log", env=env) as (channel, pid):
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
    parser.add_argument("--before-src", dest="before_src", type=Path,
                        help="compare this earlier checkout's server with this code's (both on uvloop)")
    args = parser.parse_args()
    servers = variants(args.before_src)
    names = list(servers)
    base, other = names
    folder = args.data_dir / str(args.rows)
    pg, scopes = ensure_seeded(folder, args.rows, load_pool())
    asks = plan(random.Random(5), scopes, load_pool(), 400)
    rounds: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    try:
        for r in range(args.rounds):
            for name in names if r % 2 == 0 else names[::-1]:
                got = one_round(pg.url, folder, name, servers[name], asks, args)
                rounds[name].append(got)
                print(f"round {r + 1} {name}: lone p50 {got['lone']['p50']:.2f} ms, {got['rps']:.0f} req/s, "
                      f"CPU {got['cpu_ms']:.2f} ms per search", flush=True)
    finally:
        pg.stop()

    def med(name: str, pick: str) -> float:
        return float(statistics.median(
            r["lone"][pick.split(".")[1]] if pick.startswith("lone.") else r[pick] for r in rounds[name]))

    print(f"\nmedian of {args.rounds} rounds, {args.clients} clients saturating, {args.lone} lone searches per round\n")
    print("| server | lone p50 ms | lone p95 ms | saturated req/s | server CPU ms per search |")
    print("|---|---:|---:|---:|---:|")
    for name in names:
        print(f"| {name} | {med(name, 'lone.p50'):.2f} | {med(name, 'lone.p95'):.2f} | {med(name, 'rps'):.0f} | "
              f"{med(name, 'cpu_ms'):.2f} |")
    print(f"| {other} / {base} | {med(other, 'lone.p50') / med(base, 'lone.p50'):.2f}x | "
          f"{med(other, 'lone.p95') / med(base, 'lone.p95'):.2f}x | "
          f"{med(other, 'rps') / med(base, 'rps'):.2f}x | "
          f"{med(other, 'cpu_ms') / med(base, 'cpu_ms'):.2f}x |")


if __name__ == "__main__":
    main()
