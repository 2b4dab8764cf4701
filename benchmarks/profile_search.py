"""Where the server's CPU goes under search load: py-spy samples of ``npc-memory serve``, grouped by part.

    python -m benchmarks.profile_search [--rows 10000] [--text] [--clients 4] [--seconds 10] [--raw out.txt]

Uses (and seeds on first use) the database of ``benchmarks.search_speed`` at that scale, starts a server with
``embedding.threads`` 0, saturates it with caller-vector searches (``--text``: text searches, the server
embedding each) while ``py-spy record`` samples it, and prints the server's CPU ms per search (psutil), the event
loop's thread's and the other threads' own, and the share of the loop thread's samples in each part of the request
path (py-spy counts a thread blocked in C code, gRPC's poller in epoll, as busy, so only the loop's samples are
shared out). py-spy is pinned in the dev dependencies.
"""

from __future__ import annotations

import argparse
import random
import tempfile
from pathlib import Path

from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc

from benchmarks.sampling import share_table
from benchmarks.search_speed import ensure_seeded, plan
from benchmarks.search_speed_load import saturate, search_request
from benchmarks.search_speed_parts import served_process
from benchmarks.search_speed_targets import profile_load
from loadtest.pool import load_pool


def main() -> None:
    """Seed if needed, serve, load, sample, print the grouped profile."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--data-dir", type=Path, default=Path(tempfile.gettempdir()) / "npc-memory-speed")
    parser.add_argument("--text", action="store_true", help="text searches (the server embeds) instead of vectors")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--raw", type=Path, help="keep py-spy's raw samples here")
    args = parser.parse_args()
    folder = args.data_dir / str(args.rows)
    pool = load_pool()
    pg, scopes = ensure_seeded(folder, args.rows, pool)
    asks = plan(random.Random(3), scopes, pool, 400)
    raw = args.raw or folder / "profile.txt"
    env = {"NPC_MEMORY_EMBEDDING_THREADS": "0", "NPC_MEMORY_QUERY_CACHE_SIZE": "0"}
    try:
        with served_process(pg.url, folder / "profile-server.log", env=env) as (channel, pid):
            stub = svc_grpc.MemoryServiceStub(channel)
            for a in asks[:50]:
                stub.SearchMemories(search_request(a, not args.text))
            found = profile_load(pid, raw, args.seconds, lambda: saturate(
                stub, lambda i: search_request(asks[i % len(asks)], not args.text), pid, args.clients, args.seconds))
    finally:
        pg.stop()
    if "skipped" in found:
        raise SystemExit(found["skipped"])
    load, total = found["load"], found["loop_samples"]
    kind = "text" if args.text else "caller-vector"
    print(f"{kind} searches, {args.clients} clients: {load['rps']:.0f} req/s, server CPU "
          f"{load['cpu_ms_per_request']:.2f} ms per search: the event loop's thread {found['loop_cpu_ms']:.2f}, the "
          f"other threads {found['other_threads_cpu_ms']:.2f}; {total} py-spy samples on the loop's thread\n")
    print(share_table("event loop's thread", total, {k: round(v * total) for k, v in found["loop_shares"].items()}))


if __name__ == "__main__":
    main()
