"""The gRPC server: the memory, health and reflection services over an engine, and ``serve``'s whole run."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from npc_memory_client.v1 import memory_service_pb2_grpc

from npc_memory.api.servicer import MemoryServicer
from npc_memory.background import SERVICE_NAME, maintain_every, watch_health
from npc_memory.config import Config
from npc_memory.engine import MemoryEngine
from npc_memory.extraction.service import Extractor
from npc_memory.runtime import open_engine, open_extractor

log = logging.getLogger(__name__)


async def create_server(
    engine: MemoryEngine, address: str, extractor: Extractor | None = None
) -> tuple[grpc.aio.Server, int, health.aio.HealthServicer]:
    """A ready (not yet started) server with the memory, health and reflection services."""
    server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
    memory_service_pb2_grpc.add_MemoryServiceServicer_to_server(MemoryServicer(engine, extractor), server)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection(
        (SERVICE_NAME, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME),
        server,
    )
    port = server.add_insecure_port(address)
    return server, port, health_servicer


@contextlib.asynccontextmanager
async def serving(config: Config) -> AsyncIterator[int]:
    """The whole service for the block, yielding its port; on exit calls get ``grace_seconds``, then all closes.

    Runs the engine, the gRPC server, the health watcher and, when configured, the retention schedule and the
    extraction worker.
    """
    async with open_engine(config) as engine, open_extractor(config, engine) as extractor:
        server, port, health_servicer = await create_server(
            engine, f"{config.server.host}:{config.server.port}", extractor
        )
        await server.start()
        tasks = [asyncio.create_task(watch_health(engine, health_servicer))]
        if extractor is not None:
            tasks.append(asyncio.create_task(extractor.work_forever()))
        if config.retention.interval_minutes > 0:
            tasks.append(asyncio.create_task(maintain_every(
                engine.db, config.retention.interval_minutes, config.retention.policies,
                config.write.idempotency_hours,
            )))
        log.info("npc-memory listening on port %d (embedder %s, %d-d)", port, engine.embedder.name,
                 engine.embedder.dim)
        try:
            yield port
        finally:
            await server.stop(config.server.grace_seconds)
            for task in tasks:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
