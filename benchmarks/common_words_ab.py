"""Common-word caller-vector searches, two servers side by side in one run (an earlier tree's and this one).

    python -m benchmarks.common_words_ab --before-src DIR [--queries 600] [--json out.json]

Uses (and seeds on first use) the database of ``benchmarks.search_speed`` at 10,000 rows with its common-word scopes
(500 and 2,000 memories, both query terms in ~80% of them). Two ``npc-memory serve`` processes run at once on it:
DIR's code (a ``git archive COMMIT | tar -x -C DIR`` tree) and this one. Each request (the common query and a pool
question's real e5 vector) goes to both, one after the other, the order alternating, with no pause: the issue's
"caller-vector p99 ≤ 5 ms at 2,000-row scopes, the common-word case included", as ``benchmarks.search_speed``
times it, but with the earlier code beside this one instead of the bare statement.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from contextlib import ExitStack
from functools import partial
from pathlib import Path
from typing import Any

from npc_memory.text import Tokenizer
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc

from benchmarks.harness import emit
from benchmarks.search_speed import ensure_seeded
from benchmarks.search_speed_load import COMMON_QUERY, ensure_common_scopes, search_request
from benchmarks.search_speed_parts import Ask, before_pythonpath, percentiles, served_process, timed
from loadtest.pool import load_pool

WARM = 30


def main() -> None:
    """Both servers on the common-word scopes; percentiles per scope and server."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before-src", type=Path, required=True)
    parser.add_argument("--queries", type=int, default=600)
    parser.add_argument("--data-dir", type=Path, default=Path(tempfile.gettempdir()) / "npc-memory-speed")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    pool = load_pool()
    folder = args.data_dir / "10000"
    pg, _ = ensure_seeded(folder, 10_000, pool)
    rng = random.Random(1)
    result: dict[str, Any] = {"queries": args.queries, "before_src": str(args.before_src), "scopes": {}}
    try:
        common = ensure_common_scopes(pg.url, pool, Tokenizer())
        with ExitStack() as stack:
            before, _ = stack.enter_context(served_process(
                pg.url, folder / "server-before.log", env={"PYTHONPATH": before_pythonpath(args.before_src)}))
            after, _ = stack.enter_context(served_process(pg.url, folder / "server-after.log"))
            stubs = [("before", svc_grpc.MemoryServiceStub(before)), ("after", svc_grpc.MemoryServiceStub(after))]
            for user_id, heroine_id, rows in common:
                calls = [search_request(Ask(user_id, heroine_id, COMMON_QUERY,
                                            pool.query_vectors[rng.randrange(len(pool.queries))]), True)
                         for _ in range(args.queries)]
                for call in calls[:WARM]:  # each server reads the scope to hold it
                    for _, stub in stubs:
                        stub.SearchMemories(call)
                time.sleep(1.0)
                times: dict[str, list[float]] = {name: [] for name, _ in stubs}
                for i, call in enumerate(calls):
                    for name, stub in stubs if i % 2 else stubs[::-1]:
                        times[name] += timed([partial(stub.SearchMemories, call)])
                result["scopes"][str(rows)] = {name: percentiles(v) for name, v in times.items()}
    finally:
        pg.stop()
    for rows, by_server in result["scopes"].items():
        for name, p in by_server.items():
            print(f"{rows} rows, {name}: p50 {p['p50']:.2f} / p95 {p['p95']:.2f} / p99 {p['p99']:.2f} ms")
    emit(result, args.json)


if __name__ == "__main__":
    main()
