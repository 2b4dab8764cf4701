"""Does one big write stall the server? Health-check latency while the largest valid batch is stored.

    python -m benchmarks.stall [--batches 3] [--processes 1] [--database-url DSN]

Starts two real ``npc-memory serve`` subprocesses (``--embedder none``, so the batch carries its own vectors and
the model is not what is measured; each on its own embedded PostgreSQL unless a DSN is given): one tokenising in a
thread of the server process (``tokenize_processes`` 0, the baseline), one in ``--processes`` worker processes.
Then, for each round and each server in turn: health checks every 10 ms with the server idle, then the same while
one StoreMemories call of 256 facts of 2,000 characters of Korean runs. Prints the health-check latency
percentiles, the batch's own time, and the worst and p99 check of the process setting against the in-thread one.
Before tokenising ran off the event loop the worst check waited for the whole batch (seconds).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import os
import re
import signal
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc

from loadtest.korean import ANIMALS, FOODS, PLACES, obj

DIM = 384
BATCH = 256
CHARS = 2000
READY = re.compile(rb"npc-memory serving on port (\d+)")
NPC_MEMORY = str(Path(sys.executable).with_name("npc-memory"))


def long_fact(i: int, salt: str) -> str:
    """A distinct Korean text of exactly ``CHARS`` characters (sentences of the game's kind, repeated)."""
    parts: list[str] = []
    j = 0
    while sum(len(p) for p in parts) < CHARS:
        food, animal, place = FOODS[(i + j) % len(FOODS)], ANIMALS[(i * 3 + j) % len(ANIMALS)], PLACES[j % len(PLACES)]
        parts.append(f"{salt}{i}-{j}번째 날 {place}에서 {obj(food)} 먹고 {obj(animal)} 봤다고 함. ")
        j += 1
    return "".join(parts)[:CHARS]


def big_batch(scope: pb.Scope, salt: str) -> svc.StoreMemoriesRequest:
    """The largest valid StoreMemories call: 256 facts of 2,000 characters, each with its own vector."""
    memories = []
    for i in range(BATCH):
        vector = [0.0] * DIM
        vector[i % DIM] = 1.0
        memories.append(pb.MemoryInput(
            speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, content=long_fact(i, salt),
            content_type=pb.CONTENT_TYPE_EVENT, importance=5, embedding=vector,
        ))
    return svc.StoreMemoriesRequest(scope=scope, memories=memories)


async def health_latencies(channel: grpc.aio.Channel, during: Callable[[], Awaitable[Any]] | None,
                           idle_seconds: float = 1.0) -> tuple[list[float], float]:
    """Milliseconds of each health check, one every 10 ms, while ``during`` runs (or for ``idle_seconds``).

    Returns the latencies and the seconds ``during`` took (0 when idle).
    """
    stub = health_pb2_grpc.HealthStub(channel)
    latencies: list[float] = []
    done = asyncio.Event()

    async def poll() -> None:
        while not done.is_set():
            started = time.perf_counter()
            await stub.Check(health_pb2.HealthCheckRequest(), timeout=60)
            latencies.append((time.perf_counter() - started) * 1000)
            await asyncio.sleep(0.01)

    poller = asyncio.create_task(poll())
    await asyncio.sleep(0.05)  # the poller's channel is connected before the work starts
    started = time.perf_counter()
    if during is None:
        await asyncio.sleep(idle_seconds)
    else:
        await during()
    took = time.perf_counter() - started
    done.set()
    await poller
    return latencies, took if during is not None else 0.0


def summary(ms: list[float]) -> str:
    """p50 / p99 / max of a list of milliseconds."""
    ordered = sorted(ms)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"p50 {statistics.median(ordered):7.1f} ms  p99 {p99:7.1f} ms  max {ordered[-1]:7.1f} ms  (n={len(ms)})"


@asynccontextmanager
async def served(
    data_dir: Path, database_url: str | None, extra_env: dict[str, str] | None = None
) -> AsyncIterator[tuple[int, int]]:
    """``npc-memory serve --embedder none`` as a subprocess until its ready line; yields (port, pid)."""
    env = {**os.environ, "NPC_MEMORY_DATA_DIR": str(data_dir), **(extra_env or {})}
    if database_url:
        env["NPC_MEMORY_DATABASE_URL"] = database_url
    proc = await asyncio.create_subprocess_exec(
        NPC_MEMORY, "serve", "--port", "0", "--host", "127.0.0.1", "--embedder", "none",
        "--embedding-dim", str(DIM), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, env=env,
    )
    assert proc.stdout is not None
    output = b""
    try:
        while not (match := READY.search(output)):
            line = await asyncio.wait_for(proc.stdout.readline(), 120)
            if not line:
                raise RuntimeError(f"npc-memory exited:\n{output.decode(errors='replace')}")
            output += line
        # Keep reading the server's output, so a full pipe never blocks it; $STALL_LOG names a file to keep it.
        log_path = os.environ.get("STALL_LOG")
        drain = asyncio.create_task(_drain(proc.stdout, Path(log_path) if log_path else None))
        yield int(match.group(1)), proc.pid
        drain.cancel()
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):  # killed (benchmarks.crash) and already reaped
                proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(proc.communicate(), 60)


async def _drain(stream: asyncio.StreamReader, log: Path | None) -> None:
    """Read ``stream`` to its end, appending to ``log`` when given."""
    while line := await stream.readline():
        if log is not None:
            with log.open("ab") as out:
                out.write(line)


def p99(ms: list[float]) -> float:
    """The 99th percentile of a list of milliseconds."""
    ordered = sorted(ms)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


async def main_async(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    """Idle and during-batch health latencies of both settings, round by round, and their ratios."""
    settings = {"in-thread": {"NPC_MEMORY_TOKENIZE_PROCESSES": "0"},
                f"{args.processes} process(es)": {"NPC_MEMORY_TOKENIZE_PROCESSES": str(args.processes)}}
    with tempfile.TemporaryDirectory(prefix="npc-stall-") as tmp:
        async with contextlib.AsyncExitStack() as stack:
            channels: dict[str, grpc.aio.Channel] = {}
            for name, env in settings.items():
                data_dir = Path(tmp) / name.split()[0]
                port, _ = await stack.enter_async_context(served(data_dir, args.database_url, env))
                channels[name] = await stack.enter_async_context(grpc.aio.insecure_channel(f"127.0.0.1:{port}"))
            idle_all: dict[str, list[float]] = {name: [] for name in settings}
            busy_all: dict[str, list[float]] = {name: [] for name in settings}
            for r in range(args.batches):
                for name, channel in channels.items():  # alternating, so both settings share the machine's noise
                    stub = svc_grpc.MemoryServiceStub(channel)
                    scope = pb.Scope(user_id=f"stall-{uuid.uuid4().hex[:8]}", heroine_id="letia")
                    request = big_batch(scope, f"r{r}")
                    idle, _ = await health_latencies(channel, None)
                    store = functools.partial(stub.StoreMemories, request, timeout=300)
                    busy, took = await health_latencies(channel, store)
                    idle_all[name] += idle
                    busy_all[name] += busy
                    print(f"round {r + 1} {name:>14}: batch {took:5.2f} s  idle   {summary(idle)}")
                    print(f"{'':40}during {summary(busy)}")
            for name in settings:
                print(f"all rounds {name:>14}: idle   {summary(idle_all[name])}")
                print(f"{'':29}during {summary(busy_all[name])}")
            base, new = settings
            print(f"processes / in-thread during a batch: worst {max(busy_all[new]) / max(busy_all[base]):.2f}x, "
                  f"p99 {p99(busy_all[new]) / p99(busy_all[base]):.2f}x")
            return {name: {"idle_p99_ms": p99(idle_all[name]), "during_p50_ms": statistics.median(busy_all[name]),
                           "during_p99_ms": p99(busy_all[name]), "during_max_ms": max(busy_all[name])}
                    for name in settings}


def main() -> None:
    """Parse flags and run."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, default=3)
    parser.add_argument("--processes", type=int, default=1, help="tokenize_processes of the second server")
    parser.add_argument("--database-url")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    found = asyncio.run(main_async(args))
    if args.json:
        args.json.write_text(json.dumps(found, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
