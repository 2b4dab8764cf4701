"""The gRPC server: the memory, health and reflection services over an engine, and ``serve``'s whole run."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from npc_memory.api.deserialize import add_memory_service
from npc_memory.api.interceptor import ServiceInterceptor
from npc_memory.api.reflection import add_reflection
from npc_memory.api.servicer import MemoryServicer
from npc_memory.config import Config
from npc_memory.config.server import SecurityConfig, ServerConfig
from npc_memory.engine import MemoryEngine
from npc_memory.extraction.service import Extractor
from npc_memory.ops import tracing
from npc_memory.ops.keys import KeyRing
from npc_memory.ops.metrics import serve_metrics
from npc_memory.ops.tls import server_credentials
from npc_memory.server.background import SERVICE_NAME, maintain_every, sample_pool, watch_health
from npc_memory.server.runtime import open_engine, open_extractor

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider

log = logging.getLogger(__name__)


async def create_server(
    engine: MemoryEngine, address: str, security: SecurityConfig = SecurityConfig(),  # noqa: B008  (frozen)
    keys: KeyRing | None = None, reuse_port: bool = False, limits: ServerConfig = ServerConfig(),  # noqa: B008
    extractor: Extractor | None = None, traces: TracerProvider | None = None,
) -> tuple[grpc.aio.Server, int, health.aio.HealthServicer]:
    """A ready (not yet started) server with the memory, health and reflection services behind the interceptor.

    ``traces``: where each call's span goes (ops/tracing.py); None leaves the server without tracing.
    """
    interceptors: list[grpc.aio.ServerInterceptor] = [
        ServiceInterceptor(keys or KeyRing(), log_user_ids=security.log_user_ids)]
    if traces is not None:
        interceptors.insert(0, tracing.server_interceptor(traces, SERVICE_NAME))
    options = [(k, int(reuse_port) if k == "grpc.so_reuseport" else v) for k, v in limits.grpc_options()]
    server = grpc.aio.server(interceptors=interceptors, options=options)
    add_memory_service(MemoryServicer(engine, extractor), server)
    health_servicer = health.aio.HealthServicer()
    # The memory service is NOT_SERVING until the health watcher's first check (not NOT_FOUND, which a probe
    # reads as a misconfigured service name); "" keeps grpc's default, SERVING: the process is up.
    await health_servicer.set(SERVICE_NAME, health_pb2.HealthCheckResponse.NOT_SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    add_reflection(
        (SERVICE_NAME, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME),
        server,
    )
    if security.tls:
        port = server.add_secure_port(address, server_credentials(security))
    else:
        port = server.add_insecure_port(address)
    return server, port, health_servicer


_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})


def bind_host(config: Config, keys: KeyRing) -> str:
    """The configured host, or every interface when keys guard the service and localhost when nothing does."""
    if config.server.host:
        if not keys.enabled:
            log.warning("no API keys configured: any caller that reaches %s can read and erase every player",
                        config.server.host)
        host = config.server.host
    elif keys.enabled:
        host = "[::]"
    else:
        log.warning("no API keys configured: listening on localhost only (set api_keys_file, or host to override)")
        return "localhost"
    if keys.enabled and not config.security.tls and host not in _LOOPBACK:
        log.warning("API keys without TLS on %s: bearer keys and every memory travel in clear over the network "
                    "(set tls_cert and tls_key, or bind a loopback host behind a TLS proxy)", host)
    return host


def metrics_address(host: str) -> str:
    """The /metrics listener's address for the gRPC bind ``host`` (the same interface; ``[::]`` is ``::``)."""
    return host.removeprefix("[").removesuffix("]")



@contextlib.asynccontextmanager
async def started(
    config: Config, engine: MemoryEngine, server: grpc.aio.Server, keys: KeyRing, host: str, reuse_port: bool,
) -> AsyncIterator[int | None]:
    """The gRPC server started, and the HTTP face beside it when configured, yielding the HTTP port (else None).

    The HTTP face calls the server on a private socket (api/http/loopback.py), added before the server starts.
    """
    if not config.http.enabled:
        await server.start()
        yield None
        return
    from npc_memory.api.http.app import create_app, serving_http
    from npc_memory.api.http.loopback import open_channel, private_socket

    with private_socket() as address:
        server.add_insecure_port(address)
        await server.start()
        async with open_channel(address) as channel:
            app = create_app(channel, engine, keys, config.http, config.security.tls, host)
            async with serving_http(app, host, config.http, config.security, reuse_port) as port:
                yield port


@contextlib.asynccontextmanager
async def serving(
    config: Config, reuse_port: bool = False,
) -> AsyncIterator[tuple[int, health.aio.HealthServicer, int | None]]:
    """The whole service for the block, yielding its port, health servicer and HTTP port (None when off).

    Runs the health watcher, the pool sampler and, when configured, the retention schedule and the extraction
    worker. On exit health turns NOT_SERVING, the HTTP face finishes its requests, new calls are refused,
    in-flight calls get ``grace_seconds``, then the pool, the embedder and an embedded PostgreSQL stop (in
    open_engine's exits).
    """
    keys = KeyRing(path=config.security.api_keys_file)
    traces = tracing.provider() if config.security.tracing else None
    async with tracing.tracing(traces), open_engine(config) as engine, open_extractor(config, engine) as extractor:
        host = bind_host(config, keys)
        serve_metrics(config.security.metrics_port, metrics_address(host))
        server, port, health_servicer = await create_server(
            engine, f"{host}:{config.server.port}", config.security, keys, reuse_port, config.server, extractor,
            traces)
        try:
            async with started(config, engine, server, keys, host, reuse_port) as http_port:
                tasks = [asyncio.create_task(watch_health(
                             engine, health_servicer, config.server.health_interval_seconds,
                             config.server.health_timeout_seconds)),
                         asyncio.create_task(sample_pool(engine.db))]
                if extractor is not None:
                    tasks.append(asyncio.create_task(extractor.work_forever()))
                if config.retention.interval_minutes > 0:
                    tasks.append(asyncio.create_task(maintain_every(
                        engine.db, config.retention.interval_minutes, config.retention.policies,
                        config.write.idempotency_hours,
                    )))
                log.info("npc-memory listening on %s:%d (embedder %s, %d-d, tls %s, api keys %s, event loop %s)",
                         host, port, engine.embedder.name, engine.embedder.dim, config.security.tls, keys.enabled,
                         type(asyncio.get_running_loop()).__module__.split(".")[0])
                try:
                    yield port, health_servicer, http_port
                finally:
                    for task in tasks:
                        task.cancel()
                        with contextlib.suppress(asyncio.CancelledError):
                            await task
                    await health_servicer.enter_graceful_shutdown()
        finally:
            await server.stop(config.server.grace_seconds)
