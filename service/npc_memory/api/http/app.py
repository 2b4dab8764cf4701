"""The HTTP face as one ASGI app, and its uvicorn server run on the gRPC server's own event loop."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import grpc
import uvicorn
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from npc_memory.api.http.grpcweb import ALLOWED_HEADERS, EXPOSED_HEADERS, GrpcWeb
from npc_memory.api.http.inspector import FormError, Inspector
from npc_memory.api.mcp.tools import build_server, key_from_headers
from npc_memory.config.http import HttpConfig
from npc_memory.config.server import SecurityConfig
from npc_memory.engine import MemoryEngine
from npc_memory.ops.keys import KeyRing

log = logging.getLogger(__name__)

STATIC = Path(__file__).parent / "static"
MCP_PATH = "/mcp"
"""Where MCP's streamable HTTP transport answers."""


class _Quiet(uvicorn.Server):
    """uvicorn without its own signal handlers: ``serve`` owns SIGTERM and stops the HTTP face with the rest."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """Leave the process's signal handling alone."""
        yield


def create_app(channel: grpc.aio.Channel, engine: MemoryEngine, keys: KeyRing, settings: HttpConfig,
               tls: bool, host: str) -> Starlette:
    """The inspector, gRPC-Web and MCP, all calling the service on ``channel``."""
    inspector = Inspector(channel, engine, keys, settings, secure_cookie=tls)
    mcp = build_server(channel, key_from_headers)
    mcp_app = mcp.streamable_http_app(streamable_http_path=MCP_PATH, stateless_http=True, json_response=True,
                                      host=host.strip("[]"))
    cross_origin = [Middleware(CORSMiddleware, allow_origins=list(settings.cors_origins),
                               allow_methods=["POST", "GET", "OPTIONS"],
                               allow_headers=[*ALLOWED_HEADERS, "mcp-session-id", "mcp-protocol-version"],
                               expose_headers=[*EXPOSED_HEADERS, "mcp-session-id"])]
    machine: list[BaseRoute] = [*GrpcWeb(channel).routes(), *mcp_app.routes]
    routes: list[BaseRoute] = [
        *inspector.routes(),
        Route("/healthz", _healthz),
        Mount("/static", StaticFiles(directory=str(STATIC)), name="static"),
        Mount("", routes=machine, middleware=cross_origin) if settings.cors_origins else Mount("", routes=machine),
    ]

    async def rpc_refused(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, grpc.aio.AioRpcError)
        return inspector.refused(request, exc)

    async def form_refused(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, FormError)
        return inspector.form_refused(request, exc)

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        async with mcp.session_manager.run():
            yield

    return Starlette(routes=routes, lifespan=lifespan,
                     exception_handlers={grpc.aio.AioRpcError: rpc_refused, FormError: form_refused})


async def _healthz(_request: Request) -> Response:
    return PlainTextResponse("ok\n")


def _listening_socket(host: str, port: int, reuse_port: bool) -> socket.socket:
    """A bound, listening TCP socket (SO_REUSEPORT for ``--workers``), IPv6 dual-stack for ``[::]``."""
    bare = host.strip("[]")
    info = socket.getaddrinfo(bare or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    sock = socket.socket(info[0], socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    if info[0] == socket.AF_INET6:
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    sock.bind(info[4])
    sock.listen(128)
    sock.setblocking(False)
    return sock


@contextlib.asynccontextmanager
async def serving_http(app: Starlette, host: str, settings: HttpConfig, security: SecurityConfig,
                       reuse_port: bool = False) -> AsyncIterator[int]:
    """Serve ``app`` on the HTTP port for the block (TLS as the gRPC port has it), yielding the bound port."""
    sock = _listening_socket(host, settings.port or 0, reuse_port)
    port = int(sock.getsockname()[1])
    options: dict[str, Any] = {}
    if security.tls:
        options.update(ssl_certfile=str(security.tls_cert), ssl_keyfile=str(security.tls_key))
        if security.tls_client_ca is not None:
            import ssl

            options.update(ssl_ca_certs=str(security.tls_client_ca), ssl_cert_reqs=ssl.CERT_REQUIRED)
    config = uvicorn.Config(app, log_config=None, access_log=False, lifespan="on", server_header=False,
                            timeout_graceful_shutdown=5, **options)
    server = _Quiet(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started and not task.done():  # noqa: ASYNC110  (uvicorn.Server has a flag, no event)
        await asyncio.sleep(0.01)
    if task.done():
        sock.close()
        await task  # raises what stopped it
        raise RuntimeError("the HTTP face stopped while starting")
    log.info("http face on %s:%d (inspector, gRPC-Web, MCP at %s)", host, port, MCP_PATH)
    try:
        yield port
    finally:
        server.should_exit = True
        await task
        sock.close()
