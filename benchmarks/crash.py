"""kill -9 of the service under write load: no acknowledged write lost, no half batch, exact idempotent replay.

    python -m benchmarks.crash [--rounds 5] [--writers 8] [--database-url DSN]

Each round starts a real ``npc-memory serve`` (``--embedder none``: the facts carry their own vectors; on an
embedded PostgreSQL in a temporary directory unless a DSN is given), runs writer tasks that each store batches
of 1-4 facts with a ``request_id``, sends SIGKILL to the server once enough are acknowledged (with calls in
flight), starts it again on the same database and checks:

- every acknowledged memory is there (lost = 0);
- every batch sent, acknowledged or cut off, is all there or not there at all (half batches = 0);
- replaying every acknowledged request answers exactly its first answer, and a cut-off request, replayed twice,
  is written once and answered the same both times (mismatches = 0);
- the server's tokenising worker processes are gone after the kill (orphans = 0).

tests/resilience/test_crash.py runs one round of this against the test database's server.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import signal
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import psutil
import psycopg
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc

from benchmarks.stall import DIM, served
from loadtest.korean import ANIMALS, FOODS, obj

Answer = list[tuple[str, int]]


@dataclass
class Sent:
    """One StoreMemories call and, if it was acknowledged, its answer (memory id and outcome per fact)."""

    request: svc.StoreMemoriesRequest
    answer: Answer | None = None


@dataclass
class RoundResult:
    """What one kill-and-restart round found."""

    acked: int = 0
    acked_facts: int = 0
    cut_off: int = 0
    lost: int = 0
    half_batches: int = 0
    replay_mismatches: int = 0
    orphans: int = 0
    restart_seconds: float = 0.0
    failures: list[str] = field(default_factory=list)


def batch(user_id: str, rng: random.Random) -> svc.StoreMemoriesRequest:
    """1-4 distinct facts, each with its own vector, under a new request id that also marks their contents."""
    request_id = uuid.uuid4().hex
    request = svc.StoreMemoriesRequest(scope=pb.Scope(user_id=user_id, heroine_id="letia"), request_id=request_id)
    for j in range(rng.randint(1, 4)):
        vector = [rng.uniform(-1.0, 1.0) for _ in range(DIM)]
        request.memories.append(pb.MemoryInput(
            speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, content_type=pb.CONTENT_TYPE_EVENT, importance=5,
            content=f"{request_id} {j}번째 날 {obj(rng.choice(FOODS))} 먹고 {obj(rng.choice(ANIMALS))} 봤다고 함",
            embedding=vector,
        ))
    return request


def answer_of(reply: svc.StoreMemoriesResponse) -> Answer:
    """The comparable part of a StoreMemories answer."""
    return [(r.memory_id, int(r.outcome)) for r in reply.results]


async def load_until_killed(
    stub: svc_grpc.MemoryServiceAsyncStub, pid: int, run: str, writers: int, min_acks: int, seed: int,
) -> tuple[list[Sent], int]:
    """Writers store until ``min_acks`` answers (and a random extra moment), then SIGKILL ``pid`` mid-load.

    Returns every call sent and how many worker processes the server had at the kill.
    """
    sent: list[Sent] = []
    acked = asyncio.Event()
    killed = asyncio.Event()

    async def writer(n: int) -> None:
        rng = random.Random(seed * 1000 + n)
        while not killed.is_set():
            call = Sent(batch(f"crash-{run}-{n}", rng))
            sent.append(call)
            try:
                call.answer = answer_of(await stub.StoreMemories(call.request, timeout=30))
            except grpc.aio.AioRpcError:
                return  # the server is gone: this call is cut off (it may or may not have committed)
            if sum(s.answer is not None for s in sent) >= min_acks:
                acked.set()

    tasks = [asyncio.create_task(writer(n)) for n in range(writers)]
    await asyncio.wait_for(acked.wait(), 120)
    await asyncio.sleep(random.Random(seed).uniform(0.0, 0.5))
    children = psutil.Process(pid).children(recursive=True)
    os.kill(pid, signal.SIGKILL)
    killed.set()
    await asyncio.gather(*tasks)
    return sent, len(children)


def orphans_of(pids: Sequence[int], wait_seconds: float = 10.0) -> int:
    """How many of ``pids`` (the killed server's children) outlive it by ``wait_seconds``; those are killed."""
    alive = [psutil.Process(p) for p in pids if psutil.pid_exists(p)]
    _, still = psutil.wait_procs(alive, timeout=wait_seconds)
    for proc in still:
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.kill()
    return len(still)


async def stored_contents(database_url: str, users: list[str]) -> dict[str, list[str]]:
    """The stored contents of the players, by the request id that starts each."""
    by_request: dict[str, list[str]] = {}
    async with await psycopg.AsyncConnection.connect(database_url) as conn:
        cur = await conn.execute("SELECT content FROM user_memories WHERE user_id = ANY(%s)", (users,))
        for (content,) in await cur.fetchall():
            by_request.setdefault(content.split(" ", 1)[0], []).append(content)
    return by_request


async def check(stub: svc_grpc.MemoryServiceAsyncStub, database_url: str, sent: list[Sent]) -> RoundResult:
    """After the restart: acknowledged rows present, batches whole, replays exact."""
    result = RoundResult(acked=sum(s.answer is not None for s in sent), cut_off=sum(s.answer is None for s in sent))
    users = sorted({s.request.scope.user_id for s in sent})
    stored = await stored_contents(database_url, users)
    for s in sent:
        rid, want = s.request.request_id, len(s.request.memories)
        have = len(stored.get(rid, []))
        if have not in (0, want):
            result.half_batches += 1
            result.failures.append(f"{rid}: {have} of {want} facts stored")
        if s.answer is not None:
            result.acked_facts += want
            if have != want:
                result.lost += want - have
                result.failures.append(f"{rid}: acknowledged, {want - have} of {want} facts lost")
    for s in sent:
        first = answer_of(await stub.StoreMemories(s.request, timeout=60))
        again = answer_of(await stub.StoreMemories(s.request, timeout=60)) if s.answer is None else first
        if first != (s.answer or first) or again != first:
            result.replay_mismatches += 1
            result.failures.append(f"{s.request.request_id}: replay {first} / {again}, first answer {s.answer}")
    after = await stored_contents(database_url, users)
    for s in sent:  # every replayed batch is now stored exactly once
        if len(after.get(s.request.request_id, [])) != len(s.request.memories):
            result.replay_mismatches += 1
            result.failures.append(f"{s.request.request_id}: {len(after.get(s.request.request_id, []))} rows")
    return result


async def crash_round(
    data_dir: Path, database_url: str, writers: int = 8, min_acks: int = 40, seed: int = 0,
) -> RoundResult:
    """Serve, load, kill -9, serve again on the same database, check."""
    run = uuid.uuid4().hex[:8]
    async with served(data_dir, database_url) as (port, pid), \
            grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        children = [p.pid for p in psutil.Process(pid).children(recursive=True)]
        sent, _ = await load_until_killed(svc_grpc.MemoryServiceStub(channel), pid, run, writers, min_acks, seed)
    orphans = await asyncio.to_thread(orphans_of, children)
    started = time.monotonic()
    async with served(data_dir, database_url) as (port, _), \
            grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        restart = time.monotonic() - started
        result = await check(svc_grpc.MemoryServiceStub(channel), database_url, sent)
    result.orphans, result.restart_seconds = orphans, restart
    return result


async def main_async(args: argparse.Namespace) -> dict[str, int]:
    """Rounds against one database; the totals, printed at the end."""
    with tempfile.TemporaryDirectory(prefix="npc-crash-") as tmp:
        database_url = args.database_url
        embedded = None
        if not database_url:
            from npc_memory.store.embedded import EmbeddedPostgres

            embedded = EmbeddedPostgres(Path(tmp) / "pg")
            database_url = embedded.url
        totals = RoundResult()
        try:
            for r in range(args.rounds):
                res = await crash_round(Path(tmp), database_url, args.writers, args.min_acks, seed=r)
                print(f"round {r + 1}: acked {res.acked} calls ({res.acked_facts} facts), cut off {res.cut_off}; "
                      f"lost {res.lost}, half batches {res.half_batches}, replay mismatches {res.replay_mismatches}, "
                      f"orphans {res.orphans}; restart {res.restart_seconds:.1f} s", flush=True)
                for line in res.failures[:5]:
                    print("   ", line)
                for name in ("acked", "acked_facts", "cut_off", "lost", "half_batches", "replay_mismatches",
                             "orphans"):
                    setattr(totals, name, getattr(totals, name) + getattr(res, name))
        finally:
            if embedded is not None:
                embedded.stop()
        print(f"all {args.rounds} rounds: acked {totals.acked} calls ({totals.acked_facts} facts), cut off "
              f"{totals.cut_off}; lost {totals.lost}, half batches {totals.half_batches}, replay mismatches "
              f"{totals.replay_mismatches}, orphans {totals.orphans}")
        return {"rounds": args.rounds} | {k: v for k, v in vars(totals).items() if k != "failures"}


def main() -> None:
    """Parse flags and run."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--min-acks", dest="min_acks", type=int, default=200,
                        help="acknowledged calls before the kill")
    parser.add_argument("--database-url")
    parser.add_argument("--json", type=Path, help="also write the totals here")
    args = parser.parse_args()
    totals = asyncio.run(main_async(args))
    if args.json:
        args.json.write_text(json.dumps(totals, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
