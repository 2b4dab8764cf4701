"""The gRPC server's limits come from the configuration and are enforced."""

from __future__ import annotations

import uuid
from uuid import UUID

import grpc
import numpy as np
import pytest
from npc_memory.config import load_config
from npc_memory.config.server import ServerConfig
from npc_memory.domain.model import ContentType, MemoryFilter, NewMemory, Scope, Speaker, Subject
from npc_memory.engine import MemoryEngine
from npc_memory.server import create_server
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc


def test_limits_are_read_from_the_environment() -> None:
    """NPC_MEMORY_MAX_CONCURRENT_STREAMS and friends reach the server's gRPC options."""
    config = load_config({}, {"NPC_MEMORY_MAX_CONCURRENT_STREAMS": "7", "NPC_MEMORY_MAX_CONNECTION_AGE_SECONDS": "90",
                              "NPC_MEMORY_MAX_SEND_MESSAGE_BYTES": "4096"})
    options = dict(config.server.grpc_options())
    assert options["grpc.max_concurrent_streams"] == 7
    assert options["grpc.max_connection_age_ms"] == 90_000
    assert options["grpc.max_send_message_length"] == 4096


async def test_a_response_over_the_send_limit_fails_instead_of_being_buffered(engine: MemoryEngine) -> None:
    """With max_send_message_bytes 6,000, a page of one 700-character memory is sent, a page of three is not."""
    server, port, _ = await create_server(engine, "127.0.0.1:0", limits=ServerConfig(max_send_message_bytes=6000))
    await server.start()
    scope = pb.Scope(user_id=f"limit-{uuid.uuid4().hex[:8]}", heroine_id="roco")
    vector = [1.0] + [0.0] * (engine.embedder.dim - 1)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = svc_grpc.MemoryServiceStub(channel)
            await stub.StoreMemories(svc.StoreMemoriesRequest(scope=scope, memories=[pb.MemoryInput(
                speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, content_type=pb.CONTENT_TYPE_EVENT,
                content=f"{i}번째 이야기 " + "가나다라마바사" * 100, embedding=vector,
            ) for i in range(3)]))
            small = await stub.ListMemories(svc.ListMemoriesRequest(scope=scope, page_size=1))
            assert len(small.memories) == 1
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await stub.ListMemories(svc.ListMemoriesRequest(scope=scope, page_size=3))
        assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    finally:
        await server.stop(0)


async def test_a_list_page_stops_at_its_byte_budget_and_the_next_pages_continue(engine: MemoryEngine) -> None:
    """Five 2,000-character memories under a 10 KB budget come one per page, each exactly once, in order."""
    scope = Scope(user_id=f"bytes-{uuid.uuid4().hex[:8]}", heroine_id="lupames")
    vector = np.zeros(engine.embedder.dim, dtype=np.float32)
    vector[0] = 1.0
    await engine.store(scope, [NewMemory(
        Speaker.USER, Subject.USER, "user", ContentType.EVENT, (f"{i}번째 긴 이야기 " + "가나다라" * 500)[:2000],
        importance=5, embedding=vector,
    ) for i in range(5)])
    whole, _ = await engine.list_page(scope, MemoryFilter(), False, 5, None)
    pages: list[list[UUID]] = []
    after = None
    while True:
        page, after = await engine.list_page(scope, MemoryFilter(), False, 5, after, max_bytes=10_000)
        pages.append([m.id for m in page])
        if after is None:
            break
    assert pages == [[m.id] for m in whole]
