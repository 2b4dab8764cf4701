"""The database stops under load and starts again: how fast calls fail, how the service reports it, how it recovers.

    python -m benchmarks.db_outage [--rounds 3] [--outage 5] [--writers 4] [--searchers 4]

Runs an embedded PostgreSQL of its own and a real ``npc-memory serve`` on it (``--embedder none``: the calls carry
their vectors), with writer tasks storing facts (each with a ``request_id``) and searcher tasks searching, and a
health check every 20 ms. Each round stops PostgreSQL (``pg_ctl stop``, fast mode: sessions are cut), keeps it
down ``--outage`` seconds, starts it again, and prints:

- the failing calls' status codes (UNAVAILABLE only; never INTERNAL or UNKNOWN) and their latency (how fast a
  call turns UNAVAILABLE);
- the health flip: seconds from the start of ``pg_ctl stop`` to the first NOT_SERVING check;
- recovery: seconds from the database being up again to the first successful store, the first successful
  search, and the first SERVING check;
- acknowledged writes lost (0): every memory id a store answered is in the database afterwards.

tests/resilience/test_db_outage.py runs one short round and asserts the codes, the flip and the recovery.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import random
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import psycopg
from grpc_health.v1 import health_pb2, health_pb2_grpc
from npc_memory.store.embedded import EmbeddedPostgres
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc

from benchmarks.stall import DIM, served
from loadtest.korean import ANIMALS, FOODS, obj

CALL_TIMEOUT = 30.0
HEALTH_EVERY = 0.02
SERVING = health_pb2.HealthCheckResponse.SERVING


@dataclass
class Call:
    """One finished call: when it started and ended (monotonic seconds), its method and status."""

    method: str
    started: float
    ended: float
    code: grpc.StatusCode
    details: str = ""
    """The status message the client was given."""


@dataclass
class OutageResult:
    """What one stop/start of the database showed."""

    down_at: float = 0.0
    up_at: float = 0.0
    stop_seconds: float = 0.0
    start_seconds: float = 0.0
    failed: list[Call] = field(default_factory=list)
    health_flip: float | None = None
    first_store: float | None = None
    first_search: float | None = None
    serving_again: float | None = None
    acked: int = 0
    lost: int = 0

    def codes(self) -> dict[str, int]:
        """How many failing calls ended with each status code."""
        out: dict[str, int] = {}
        for c in self.failed:
            out[c.code.name] = out.get(c.code.name, 0) + 1
        return out


class Load:
    """Writers, searchers and a health poller against one server, recording every outcome."""

    def __init__(self, channel: grpc.aio.Channel, run: str) -> None:
        self.stub = svc_grpc.MemoryServiceStub(channel)
        self.health = health_pb2_grpc.HealthStub(channel)
        self.run = run
        self.calls: list[Call] = []
        self.acked: list[str] = []
        self.checks: list[tuple[float, int]] = []
        self.stop = asyncio.Event()

    async def _call(self, method: str, send: Callable[[], Awaitable[object]]) -> object | None:
        started = time.monotonic()
        try:
            reply = await send()
        except grpc.aio.AioRpcError as exc:
            self.calls.append(Call(method, started, time.monotonic(), exc.code(), exc.details() or ""))
            await asyncio.sleep(0.02)  # a failing server is not hammered in a tight loop
            return None
        self.calls.append(Call(method, started, time.monotonic(), grpc.StatusCode.OK))
        return reply

    def _vector(self, rng: random.Random) -> list[float]:
        return [rng.uniform(-1.0, 1.0) for _ in range(DIM)]

    async def writer(self, n: int) -> None:
        """Store one fact at a time, with a request id, until stopped."""
        rng = random.Random(n)
        scope = pb.Scope(user_id=f"outage-{self.run}-{n}", heroine_id="letia")
        while not self.stop.is_set():
            request = svc.StoreMemoriesRequest(scope=scope, request_id=uuid.uuid4().hex, memories=[pb.MemoryInput(
                speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, content_type=pb.CONTENT_TYPE_EVENT, importance=5,
                content=f"{uuid.uuid4().hex} {obj(rng.choice(FOODS))} 먹고 {obj(rng.choice(ANIMALS))} 봤다고 함",
                embedding=self._vector(rng))])
            reply = await self._call("StoreMemories", functools.partial(
                self.stub.StoreMemories, request, timeout=CALL_TIMEOUT))
            if isinstance(reply, svc.StoreMemoriesResponse):
                self.acked += [r.memory_id for r in reply.results]

    async def searcher(self, n: int) -> None:
        """Search a writer's scope until stopped."""
        rng = random.Random(1000 + n)
        scope = pb.Scope(user_id=f"outage-{self.run}-{n}", heroine_id="letia")
        while not self.stop.is_set():
            request = svc.SearchMemoriesRequest(scope=scope, query=f"{rng.choice(ANIMALS)} 봤어?", limit=10,
                                                query_embedding=self._vector(rng))
            await self._call("SearchMemories", functools.partial(
                self.stub.SearchMemories, request, timeout=CALL_TIMEOUT))

    async def poll_health(self) -> None:
        """A health check every 20 ms until stopped: (time, status) of each answer."""
        while not self.stop.is_set():
            try:
                reply = await self.health.Check(health_pb2.HealthCheckRequest(), timeout=5)
                self.checks.append((time.monotonic(), int(reply.status)))
            except grpc.aio.AioRpcError:
                self.checks.append((time.monotonic(), -1))
            await asyncio.sleep(HEALTH_EVERY)


def _first(times: list[float], after: float) -> float | None:
    later = [t - after for t in times if t >= after]
    return min(later) if later else None


async def outage(
    load: Load, db: list[EmbeddedPostgres], data_dir: Path, outage_seconds: float, settle_seconds: float,
) -> OutageResult:
    """Stop the database (``db[0]``, replaced by the restarted one) under the load, start it again; measure."""
    pg = db[0]
    res = OutageResult()
    await asyncio.sleep(settle_seconds)
    calls_before = len(load.calls)
    began = time.monotonic()
    await asyncio.to_thread(pg.stop)
    res.down_at = time.monotonic()
    res.stop_seconds = res.down_at - began
    await asyncio.sleep(outage_seconds)
    began = time.monotonic()
    started = await asyncio.to_thread(EmbeddedPostgres, data_dir)
    res.up_at = time.monotonic()
    res.start_seconds = res.up_at - began
    db[0] = started
    assert started.url == pg.url, "the restarted database has another address"
    deadline = res.up_at + 60
    while time.monotonic() < deadline:
        recent = load.calls[calls_before:]
        ok = [c for c in recent if c.code == grpc.StatusCode.OK and c.started >= res.up_at]
        serving = [t for t, s in load.checks if t >= res.up_at and s == SERVING]
        if serving and {c.method for c in ok} >= {"StoreMemories", "SearchMemories"}:
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(settle_seconds)
    recent = load.calls[calls_before:]
    res.failed = [c for c in recent if c.code != grpc.StatusCode.OK]
    res.health_flip = _first([t for t, s in load.checks if s not in (SERVING, -1)], res.down_at - res.stop_seconds)
    res.serving_again = _first([t for t, s in load.checks if s == SERVING], res.up_at)
    for method, attr in (("StoreMemories", "first_store"), ("SearchMemories", "first_search")):
        setattr(res, attr, _first([c.ended for c in recent if c.method == method and c.code == grpc.StatusCode.OK
                                   and c.started >= res.up_at], res.up_at))
    return res


async def lost_of(database_url: str, ids: list[str]) -> int:
    """How many of the acknowledged memory ids are not in the database."""
    async with await psycopg.AsyncConnection.connect(database_url) as conn:
        cur = await conn.execute("SELECT count(*) FROM user_memories WHERE id = ANY(%s::uuid[])", (ids,))
        row = await cur.fetchone()
    return len(ids) - (int(row[0]) if row else 0)


async def run_outages(
    tmp: Path, rounds: int, outage_seconds: float, writers: int, searchers: int, settle_seconds: float = 2.0,
    server_env: dict[str, str] | None = None,
) -> list[OutageResult]:
    """The database, the server and the load; ``rounds`` outages in a row; acknowledged writes checked at the end."""
    db = [EmbeddedPostgres(tmp / "pg")]
    url = db[0].url
    results: list[OutageResult] = []
    try:
        async with served(tmp / "serve", url, server_env) as (port, _), \
                grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            load = Load(channel, uuid.uuid4().hex[:8])
            tasks = [asyncio.create_task(load.poll_health())]
            tasks += [asyncio.create_task(load.writer(n)) for n in range(writers)]
            tasks += [asyncio.create_task(load.searcher(n)) for n in range(searchers)]
            try:
                for _ in range(rounds):
                    results.append(await outage(load, db, tmp / "pg", outage_seconds, settle_seconds))
            finally:
                load.stop.set()
                await asyncio.gather(*tasks)
            lost = await lost_of(url, load.acked)
            for r in results:
                r.acked, r.lost = len(load.acked), lost
    finally:
        db[0].stop()
    return results


def _ms(values: list[float]) -> str:
    if not values:
        return "none"
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"p50 {statistics.median(ordered) * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms, max {ordered[-1] * 1000:.0f} ms"


def _s(value: float | None) -> str:
    return "never" if value is None else f"{value:.2f} s"


def report(r: OutageResult, n: int) -> str:
    """One round's numbers."""
    return (
        f"round {n}: database stop took {r.stop_seconds:.2f} s, start {r.start_seconds:.2f} s\n"
        f"  failing calls: {len(r.failed)} {r.codes()}; latency {_ms([c.ended - c.started for c in r.failed])}\n"
        f"  health NOT_SERVING {_s(r.health_flip)} after the stop began\n"
        f"  after it is up: first store {_s(r.first_store)}, first search {_s(r.first_search)}, "
        f"health SERVING {_s(r.serving_again)}"
    )


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    """Run and print; the figures."""
    with tempfile.TemporaryDirectory(prefix="npc-outage-") as tmp:
        results = await run_outages(Path(tmp), args.rounds, args.outage, args.writers, args.searchers)
    for n, r in enumerate(results, 1):
        print(report(r, n))
    if results:
        print(f"acknowledged writes: {results[-1].acked}, lost: {results[-1].lost}")
    return figures(results)


def figures(results: list[OutageResult]) -> dict[str, Any]:
    """The rounds' numbers as JSON: failing calls' codes and latency, the health flip, recovery, writes lost."""
    def worst(values: list[float | None]) -> float | None:
        return None if any(v is None for v in values) or not values else max(v for v in values if v is not None)

    failed = [c.ended - c.started for r in results for c in r.failed]
    codes: dict[str, int] = {}
    for r in results:
        for code, n in r.codes().items():
            codes[code] = codes.get(code, 0) + n
    return {"rounds": len(results), "failed_calls": len(failed), "codes": codes,
            "failed_call_p50_s": statistics.median(failed) if failed else None,
            "failed_call_max_s": max(failed) if failed else None,
            "health_flip_max_s": worst([r.health_flip for r in results]),
            "first_store_max_s": worst([r.first_store for r in results]),
            "first_search_max_s": worst([r.first_search for r in results]),
            "serving_again_max_s": worst([r.serving_again for r in results]),
            "acked": results[-1].acked if results else 0, "lost": results[-1].lost if results else 0}


def main() -> None:
    """Parse flags and run."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--outage", type=float, default=5.0, help="seconds the database stays down")
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--searchers", type=int, default=4)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    found = asyncio.run(main_async(args))
    if args.json:
        args.json.write_text(json.dumps(found, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
