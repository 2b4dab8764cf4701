"""Wiring: start the database, embedder and gRPC server from a Config; stop them in reverse."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field, replace

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from npc_memory.api.deserialize import add_memory_service
from npc_memory.api.servicer import MemoryServicer
from npc_memory.config import Config
from npc_memory.embedding import Embedder, create_embedder
from npc_memory.engine import MemoryEngine
from npc_memory.errors import NpcMemoryError
from npc_memory.store import Database
from npc_memory.store.embedded import EmbeddedPostgres
from npc_memory.store.migrate import migrate
from npc_memory.store.search_pgroonga import pgroonga_available, prepare_pgroonga, resolve_backend
from npc_memory.store.settings import check_embedding_model
from npc_memory.text import Tokenizer
from npc_memory.v1 import memory_service_pb2

log = logging.getLogger(__name__)

SERVICE_NAME = memory_service_pb2.DESCRIPTOR.services_by_name["MemoryService"].full_name
HEALTH_INTERVAL_SECONDS = 2.0


async def create_server(engine: MemoryEngine, address: str) -> tuple[grpc.aio.Server, int, health.aio.HealthServicer]:
    """A started-ready (not yet started) server with the memory, health and reflection services."""
    server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
    add_memory_service(MemoryServicer(engine), server)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection(
        (SERVICE_NAME, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME),
        server,
    )
    port = server.add_insecure_port(address)
    return server, port, health_servicer


async def watch_health(
    engine: MemoryEngine, servicer: health.aio.HealthServicer, interval: float = HEALTH_INTERVAL_SECONDS
) -> None:
    """Report SERVING while the database and embedder answer, NOT_SERVING while they do not."""
    serving = health_pb2.HealthCheckResponse.SERVING
    not_serving = health_pb2.HealthCheckResponse.NOT_SERVING
    while True:
        try:
            await engine.db.ping()
            await engine.embedder.ping()
            status = serving
        except NpcMemoryError as exc:
            log.warning("health check failed: %s", exc)
            status = not_serving
        for name in ("", SERVICE_NAME):
            await servicer.set(name, status)
        await asyncio.sleep(interval)


@dataclass
class Running:
    """A started service and what it owns."""

    server: grpc.aio.Server
    port: int
    engine: MemoryEngine
    embedded: EmbeddedPostgres | None
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    async def stop(self, grace: float) -> None:
        """Stop accepting calls, let in-flight ones finish, then close everything."""
        await self.server.stop(grace)
        for task in self.tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self.engine.db.close()
        await self.engine.embedder.aclose()
        if self.embedded is not None:
            await asyncio.to_thread(self.embedded.stop)


async def open_engine(config: Config, url: str, embedder: Embedder | None = None) -> MemoryEngine:
    """Migrate the database, open the pool and the embedder, and check they agree on the model."""
    await asyncio.to_thread(migrate, url)
    db = Database(url, config.database)
    await db.open()
    if embedder is None:
        embedder = await create_embedder(config.embedding)
    await check_embedding_model(db, embedder.name, embedder.dim)
    config = await _keyword_backend(db, config)
    tokenizer = await asyncio.to_thread(Tokenizer)
    return MemoryEngine(db=db, embedder=embedder, tokenizer=tokenizer, config=config)


async def _keyword_backend(db: Database, config: Config) -> Config:
    """Resolve ``auto`` by asking the server for PGroonga; prepare its index when it is the backend."""
    backend = resolve_backend(config.search.keyword_backend, await pgroonga_available(db))
    if backend == "pgroonga":
        await prepare_pgroonga(db)
    log.info("keyword search: %s", backend)
    return replace(config, search=replace(config.search, keyword_backend=backend))


async def start(config: Config) -> Running:
    """Start the embedded database if no URL is configured, then the engine and the gRPC server."""
    embedded = None
    url = config.database.url
    if url is None:
        embedded = await asyncio.to_thread(EmbeddedPostgres, config.database.data_dir)
        url = embedded.url
    engine = await open_engine(config, url)
    server, port, health_servicer = await create_server(
        engine, f"{config.server.host}:{config.server.port}"
    )
    await server.start()
    running = Running(server, port, engine, embedded)
    running.tasks.append(asyncio.create_task(watch_health(engine, health_servicer)))
    log.info("npc-memory listening on port %d (embedder %s, %d-d)", port, engine.embedder.name, engine.embedder.dim)
    return running
