"""A call whose client gave up stops its work, and is logged and counted as CANCELLED or DEADLINE_EXCEEDED."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid

import grpc
import pytest
from npc_memory.engine import MemoryEngine
from npc_memory.server import create_server
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc
from prometheus_client import REGISTRY


def _count(code: str) -> float:
    return REGISTRY.get_sample_value("npc_memory_rpc_seconds_count", {"method": "StoreMemories", "code": code}) or 0.0


def _big_batch(user_id: str) -> svc.StoreMemoriesRequest:
    """256 facts of 2,000 characters for the server to embed: minutes of model time on this machine."""
    return svc.StoreMemoriesRequest(scope=pb.Scope(user_id=user_id, heroine_id="letia"), memories=[pb.MemoryInput(
        speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, content_type=pb.CONTENT_TYPE_EVENT,
        content=(f"{i}번째 긴 이야기: " + "비 오는 날 고양이와 산책하며 매운 떡볶이를 먹었다. " * 80)[:2000],
    ) for i in range(256)])


async def _quiet_within(seconds: float, window: float = 2.0, idle_cpu: float = 0.3) -> float | None:
    """Wall seconds until this process spends under ``idle_cpu`` CPU seconds in a ``window``, or None if never."""
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        before = time.process_time()
        await asyncio.sleep(window)
        if time.process_time() - before < idle_cpu:
            return time.monotonic() - start
    return None


async def test_a_batch_past_its_deadline_stops_embedding(
    engine: MemoryEngine, caplog: pytest.LogCaptureFixture,
) -> None:
    """256 x 2,000 characters with a 2 s deadline: DEADLINE_EXCEEDED, the model goes quiet, the log says why."""
    server, port, _ = await create_server(engine, "127.0.0.1:0")
    await server.start()
    user = f"abandon-{uuid.uuid4().hex[:8]}"
    counted = _count("DEADLINE_EXCEEDED")
    caplog.set_level(logging.INFO, logger="npc_memory.access")
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = svc_grpc.MemoryServiceStub(channel)
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await stub.StoreMemories(_big_batch(user), timeout=2)
            assert err.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
            # The text in the model when the deadline passed is finished (seconds on a loaded machine); the 255
            # after it took minutes more before.
            quiet = await _quiet_within(60)
            listed = await stub.ListMemories(svc.ListMemoriesRequest(scope=pb.Scope(user_id=user, heroine_id="letia")))
    finally:
        await server.stop(0)
    assert quiet is not None, "the model kept working for an abandoned call"
    assert list(listed.memories) == []  # nothing of the abandoned batch was written
    assert _count("DEADLINE_EXCEEDED") == counted + 1
    codes = [getattr(r, "code", None) for r in caplog.records if getattr(r, "rpc", None) == "StoreMemories"]
    assert codes == ["DEADLINE_EXCEEDED"]


async def test_a_cancelled_call_is_counted_as_cancelled(engine: MemoryEngine) -> None:
    """A client that cancels its store mid-embedding is counted CANCELLED, never UNKNOWN."""
    server, port, _ = await create_server(engine, "127.0.0.1:0")
    await server.start()
    cancelled, unknown = _count("CANCELLED"), _count("UNKNOWN")
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = svc_grpc.MemoryServiceStub(channel)
            call = stub.StoreMemories(_big_batch(f"cancel-{uuid.uuid4().hex[:8]}"), timeout=60)
            await asyncio.sleep(1.5)
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            for _ in range(50):  # the server learns of the cancellation from the stream's reset
                if _count("CANCELLED") > cancelled:
                    break
                await asyncio.sleep(0.1)
    finally:
        await server.stop(0)
    assert _count("CANCELLED") == cancelled + 1
    assert _count("UNKNOWN") == unknown
