"""A burst of calls on one connection waits its turn instead of being refused, and open Watch streams block nothing."""

from __future__ import annotations

import asyncio
import uuid

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from npc_memory.config.server import ServerConfig
from npc_memory.engine import MemoryEngine
from npc_memory.server import create_server
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc

SERVICE = "npc_memory.v1.MemoryService"


async def test_a_thousand_concurrent_searches_on_one_channel_are_all_served(engine: MemoryEngine) -> None:
    """1,000 searches sent at once on a fresh channel to a server with the default limits all succeed."""
    server, port, _ = await create_server(engine, "127.0.0.1:0", limits=ServerConfig())
    await server.start()
    scope = pb.Scope(user_id=f"burst-{uuid.uuid4().hex[:8]}", heroine_id="letia")
    vector = [1.0] + [0.0] * (engine.embedder.dim - 1)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = svc_grpc.MemoryServiceStub(channel)
            calls = [stub.SearchMemories(svc.SearchMemoriesRequest(scope=scope, query="고양이", limit=3,
                                                                   query_embedding=vector), timeout=120)
                     for _ in range(1000)]
            answers = await asyncio.gather(*calls, return_exceptions=True)
    finally:
        await server.stop(0)
    failed = [a.code() for a in answers if isinstance(a, grpc.aio.AioRpcError)]
    assert failed == []
    assert all(isinstance(a, svc.SearchMemoriesResponse) for a in answers)


async def test_open_watch_streams_do_not_block_other_calls(engine: MemoryEngine) -> None:
    """With 100 health Watch streams open on a connection, a search on the same connection is still answered."""
    server, port, health_servicer = await create_server(engine, "127.0.0.1:0", limits=ServerConfig())
    await server.start()
    await health_servicer.set(SERVICE, health_pb2.HealthCheckResponse.SERVING)
    vector = [1.0] + [0.0] * (engine.embedder.dim - 1)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            health = health_pb2_grpc.HealthStub(channel)
            watches = [health.Watch(health_pb2.HealthCheckRequest(service=SERVICE)) for _ in range(100)]
            firsts = await asyncio.gather(*(w.read() for w in watches))
            assert {f.status for f in firsts} == {health_pb2.HealthCheckResponse.SERVING}
            stub = svc_grpc.MemoryServiceStub(channel)
            answer = await stub.SearchMemories(svc.SearchMemoriesRequest(
                scope=pb.Scope(user_id="watch-probe", heroine_id="letia"), query="q", query_embedding=vector,
            ), timeout=10)
            assert isinstance(answer, svc.SearchMemoriesResponse)
            for w in watches:
                w.cancel()
    finally:
        await server.stop(0)
