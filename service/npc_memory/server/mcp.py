"""``npc-memory mcp``: the memory tools over stdin/stdout, for an LLM host that starts the command itself.

With ``--target`` the tools call a running server (``npc-memory serve``) with the given API key. Without it the
command runs the service itself, on the configured database, on a private socket only this process reaches: the
same engine, interceptor and keys file, and the given key presented on every call.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import grpc

from npc_memory.api.http.loopback import open_channel, private_socket
from npc_memory.api.mcp.tools import build_server
from npc_memory.config import Config, SecurityConfig
from npc_memory.ops.keys import KeyRing


@contextlib.contextmanager
def stdout_kept_clean() -> Iterator[None]:
    """Point descriptor 1 at stderr for the block: start-up output (a child's included) must not reach MCP's wire."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def target_channel(target: str, ca: Path | None) -> grpc.aio.Channel:
    """A channel to a running server: TLS against ``ca`` when given, else plaintext."""
    if ca is None:
        return grpc.aio.insecure_channel(target)
    return grpc.aio.secure_channel(target, grpc.ssl_channel_credentials(root_certificates=ca.read_bytes()))


@contextlib.asynccontextmanager
async def own_service(config: Config) -> AsyncIterator[grpc.aio.Channel]:
    """The service run in this process on a private socket, and a channel to it."""
    from npc_memory.server import create_server
    from npc_memory.server.runtime import open_engine

    keys = KeyRing(path=config.security.api_keys_file)
    async with contextlib.AsyncExitStack() as stack:
        with stdout_kept_clean():  # an embedded PostgreSQL started here keeps stderr as its stdout
            engine = await stack.enter_async_context(open_engine(config))
        address = stack.enter_context(private_socket())
        server, _port, _health = await create_server(engine, address, SecurityConfig(), keys, limits=config.server)
        await server.start()
        stack.push_async_callback(server.stop, config.server.grace_seconds)
        yield await stack.enter_async_context(open_channel(address))


@contextlib.asynccontextmanager
async def _channel(config: Config, target: str | None, ca: Path | None) -> AsyncIterator[grpc.aio.Channel]:
    if target:
        async with target_channel(target, ca) as channel:
            yield channel
    else:
        async with own_service(config) as channel:
            yield channel


async def run_stdio(config: Config, target: str | None, key: str, ca: Path | None) -> None:
    """Serve the MCP tools on stdin/stdout until the host closes them."""
    async with _channel(config, target, ca) as channel:
        await build_server(channel, lambda _ctx: key).run_stdio_async()
