"""Where the server's CPU goes under search load: py-spy samples of ``npc-memory serve``, grouped by part.

    python -m benchmarks.profile_search [--rows 10000] [--text] [--clients 4] [--seconds 10] [--raw out.txt]

Uses (and seeds on first use) the database of ``benchmarks.search_speed`` at that scale, starts a server with
``embedding.threads`` 0, saturates it with caller-vector searches (``--text``: text searches, the server
embedding each) while ``py-spy record`` samples it, and prints the share of samples in each part of the
request path beside the server's CPU ms per search (psutil). py-spy is pinned in the dev dependencies.
"""

from __future__ import annotations

import argparse
import collections
import random
import subprocess
import tempfile
import time
from pathlib import Path

from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc

from benchmarks.search_speed import ensure_seeded, plan
from benchmarks.search_speed_load import saturate, search_request
from benchmarks.search_speed_parts import served_process
from loadtest.pool import load_pool

# The first group any frame of a stack (innermost first) belongs to; the last takes what is left.
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("psycopg: statement placeholders parsed", ("_query2pg", "_split_query", "PostgresQuery.convert", "as_bytes")),
    ("psycopg: send, wait, fetch, row making", ("psycopg/", "psycopg_pool/")),
    ("model (embedding)", ("embedding/",)),
    ("tokenising the query", ("text/", "kiwipiepy")),
    ("response building (api/convert.py)", ("api/convert.py",)),
    ("request parsing and validation", ("api/requests.py", "api/validation.py")),
    ("rows to domain values", ("scored_from_row", "memory_from_row", "search_ranked.<locals>")),
    ("interceptor: initial metadata (x-request-id)", ("interceptor.py:93",)),
    ("interceptor: decode, auth, metrics, logs", ("interceptor.py", "deserialize.py", "ops/")),
    ("engine and statement choice", ("engine.py", "search_sql.py", "store/search.py")),
)
REST = "event loop and gRPC core (asyncio handles, epoll, gRPC threads)"


Groups = tuple[tuple[str, tuple[str, ...]], ...]


def grouped(raw: Path, groups: Groups = GROUPS, rest: str = REST) -> tuple[int, dict[str, int]]:
    """Samples in all, and per group, of a py-spy ``--format raw`` file."""
    counts: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        total += int(n)
        name = rest
        for frame in reversed(stack.split(";")):
            found = next((g for g, keys in groups if any(k in frame for k in keys)), None)
            if found:
                name = found
                break
        counts[name] += int(n)
    return total, dict(counts)


def share_table(path: str, total: int, counts: dict[str, int], groups: Groups = GROUPS, rest: str = REST) -> str:
    """The Markdown table of each group's share of the samples."""
    names = [g for g, _ in groups] + [rest]
    rows = [f"| {name} | {100 * counts.get(name, 0) / max(total, 1):.1f}% |" for name in names]
    return "\n".join([f"| part of the {path} | share of samples |", "|---|---:|", *rows])


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
            spy = subprocess.Popen(["py-spy", "record", "--pid", str(pid), "--duration", str(int(args.seconds)),
                                    "--rate", "200", "--format", "raw", "--output", str(raw), "--nonblocking"])
            time.sleep(1)  # py-spy attaches
            load = saturate(stub, lambda i: search_request(asks[i % len(asks)], not args.text), pid, args.clients,
                            args.seconds)
            spy.wait()
    finally:
        pg.stop()
    total, counts = grouped(raw)
    kind = "text" if args.text else "caller-vector"
    print(f"{kind} searches, {args.clients} clients: {load['rps']:.0f} req/s, server CPU "
          f"{load['cpu_ms_per_request']:.2f} ms per search; {total} py-spy samples\n")
    print(share_table("request path", total, counts))


if __name__ == "__main__":
    main()
