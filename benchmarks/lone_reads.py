"""A lone player's reads over gRPC (GetMemory, ListMemories), two servers side by side in one run.

    python -m benchmarks.lone_reads [--rows 10000] [--rounds 100] [--pause 0.25] [--before-src DIR] [--json out.json]

Uses (and seeds on first use) the database of ``benchmarks.search_speed`` at that scale. Two ``npc-memory serve``
processes run at once on it: this code twice, or, with ``--before-src DIR`` (a ``git archive COMMIT | tar -x -C DIR``
tree), that code's server and this one. Each round, after a pause each time (a player's; 0 sends them back to back),
in turn and rotating the order: to each server a GetMemory of a stored memory, a GetMemory of an id the scope does not
have (NOT_FOUND), a first page of 20 of ListMemories, and a health check (what gRPC and this machine cost a call).
Printed: p50 / p95 / mean of each, and after / before.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import grpc
import psycopg
from grpc_health.v1 import health_pb2, health_pb2_grpc
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc

from benchmarks.lone_grpc import servers
from benchmarks.search_speed import ensure_seeded
from benchmarks.search_speed_parts import percentiles, served_process
from loadtest.pool import load_pool

CALLS = ("GetMemory", "GetMemory (not found)", "ListMemories (20)", "health check")


def _reads(stub: svc_grpc.MemoryServiceStub, health: health_pb2_grpc.HealthStub,
           stored: list[tuple[str, str, uuid.UUID]]) -> list[tuple[str, Callable[[int], Any]]]:
    """The round's calls to one server, each taking the round's number."""
    def scope(i: int) -> pb.Scope:
        return pb.Scope(user_id=stored[i % len(stored)][0], heroine_id=stored[i % len(stored)][1])

    def get(i: int) -> None:
        stub.GetMemory(svc.GetMemoryRequest(scope=scope(i), memory_id=str(stored[i % len(stored)][2])))

    def missing(i: int) -> None:
        absent = uuid.UUID(int=random.Random(i).getrandbits(128), version=4)
        try:
            stub.GetMemory(svc.GetMemoryRequest(scope=scope(i), memory_id=str(absent)))
        except grpc.RpcError as exc:
            if exc.code() != grpc.StatusCode.NOT_FOUND:
                raise

    def listing(i: int) -> None:
        stub.ListMemories(svc.ListMemoriesRequest(scope=scope(i), page_size=20))

    def check(_i: int) -> None:
        health.Check(health_pb2.HealthCheckRequest())

    return list(zip(CALLS, (get, missing, listing, check), strict=True))


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Both servers up; every round's reads sent to each, after a pause each time."""
    folder = args.data_dir / str(args.rows)
    pg, _scopes = ensure_seeded(folder, args.rows, load_pool())
    with psycopg.connect(pg.url) as conn:
        stored = conn.execute("SELECT user_id, heroine_id, id FROM user_memories WHERE invalid_at IS NULL "
                              "ORDER BY md5(id::text) LIMIT %s", (args.rounds,)).fetchall()
    samples: dict[str, list[float]] = {f"{who} {call}": [] for who in ("before", "after") for call in CALLS}
    try:
        with ExitStack() as stack:
            calls: list[tuple[str, Callable[[int], Any]]] = []
            for name, env in servers(args.before_src, {}, {}).items():
                channel, _pid = stack.enter_context(served_process(pg.url, folder / f"lone-reads-{name}.log", env=env))
                stub, health = svc_grpc.MemoryServiceStub(channel), health_pb2_grpc.HealthStub(channel)
                calls += [(f"{name} {call}", read) for call, read in _reads(stub, health, stored)]
            for i in range(5):  # warm-up: pool connections, prepared statements
                for _name, call in calls:
                    call(i)
            for i in range(args.rounds):
                turn = i % len(calls)
                for name, call in calls[turn:] + calls[:turn]:
                    time.sleep(args.pause)
                    started = time.perf_counter()
                    call(i)
                    samples[name].append((time.perf_counter() - started) * 1000)
    finally:
        pg.stop()
    out: dict[str, Any] = {name: percentiles(ms) for name, ms in samples.items()}
    out["rows"], out["rounds"], out["pause"], out["before_src"] = args.rows, args.rounds, args.pause, str(
        args.before_src or "")
    return out


def show(result: dict[str, Any]) -> None:
    """One table: each call on each server, and after / before."""
    print(f"lone reads over gRPC, {result['rows']:,} rows, {result['rounds']} rounds, {result['pause']} s apart; "
          f"before = {result['before_src'] or 'this code'}\n")
    print("| call | before p50 / p95 / mean ms | after p50 / p95 / mean ms | after / before p50 |")
    print("|---|---:|---:|---:|")
    for call in CALLS:
        b, a = result[f"before {call}"], result[f"after {call}"]
        print(f"| {call} | {b['p50']:.2f} / {b['p95']:.2f} / {b['mean']:.2f} | {a['p50']:.2f} / {a['p95']:.2f} / "
              f"{a['mean']:.2f} | {a['p50'] / b['p50']:.2f}x |")


def main() -> None:
    """Parse options, measure, print, optionally write JSON."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--pause", type=float, default=0.25, help="seconds before each call (0: back to back)")
    parser.add_argument("--data-dir", type=Path, default=Path(tempfile.gettempdir()) / "npc-memory-speed")
    parser.add_argument("--before-src", dest="before_src", type=Path, help="an earlier tree's server as 'before'")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    result = measure(args)
    show(result)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
