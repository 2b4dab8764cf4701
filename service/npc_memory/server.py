"""The gRPC server: the memory, health and reflection services over an engine, and ``serve``'s whole run."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from npc_memory.api.deserialize import add_memory_service
from npc_memory.api.servicer import MemoryServicer
from npc_memory.background import SERVICE_NAME, maintain_every, watch_health
from npc_memory.config import Config, ServerConfig
from npc_memory.engine import MemoryEngine
from npc_memory.runtime import open_engine

log = logging.getLogger(__name__)


async def create_server(
    engine: MemoryEngine, address: str, limits: ServerConfig = ServerConfig(),  # noqa: B008  (frozen)
) -> tuple[grpc.aio.Server, int, health.aio.HealthServicer]:
    """A ready (not yet started) server with the memory, health and reflection services, under ``limits``."""
    server = grpc.aio.server(options=limits.grpc_options())
    add_memory_service(MemoryServicer(engine), server)
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

    Runs the engine, the gRPC server, the health watcher and, when configured, the retention schedule.
    """
    async with open_engine(config) as engine:
        server, port, health_servicer = await create_server(
            engine, f"{config.server.host}:{config.server.port}", config.server,
        )
        await server.start()
        tasks = [asyncio.create_task(watch_health(
            engine, health_servicer, config.server.health_interval_seconds, config.server.health_timeout_seconds,
        ))]
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
