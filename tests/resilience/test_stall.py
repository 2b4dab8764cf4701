"""A big write does not freeze the server: tokenising runs in worker processes, planning and checks in threads."""

from __future__ import annotations

import uuid

import grpc
from npc_memory.engine import MemoryEngine
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc

from benchmarks.stall import DIM, big_batch, health_latencies, summary


async def test_health_checks_answer_while_the_largest_batch_is_written(
    server_port: int, engine: MemoryEngine
) -> None:
    """While 256 facts of 2,000 characters are stored, no health check waits 2 s (before: the whole batch)."""
    assert engine.embedder.dim == DIM  # the batch carries its own vectors, so the model is not what runs
    scope = pb.Scope(user_id=f"stall-{uuid.uuid4().hex[:8]}", heroine_id="letia")
    request = big_batch(scope, "t")
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server_port}") as channel:
        stub = svc_grpc.MemoryServiceStub(channel)
        latencies, took = await health_latencies(channel, lambda: stub.StoreMemories(request, timeout=300))
        # 256 long rows would slow every later test that walks the whole shared database (reembed does).
        await stub.ForgetPlayer(svc.ForgetPlayerRequest(user_id=scope.user_id))
    print(f"batch {took:.2f} s; health during it: {summary(latencies)}")
    assert len(latencies) >= 3  # checks ran during the batch, not only after it
    # The target is < 50 ms (python -m benchmarks.stall measures it); this shared machine gets a loose bound.
    assert max(latencies) < 2000
