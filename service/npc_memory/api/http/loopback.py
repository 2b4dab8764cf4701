"""The private way from the HTTP face to the gRPC server of the same process: a Unix socket in a private folder.

Every HTTP path (inspector pages, gRPC-Web, MCP) calls MemoryService through this channel, so each call passes the
very interceptor a game's call passes: the same API key and namespace check, the same validation, the same
metrics and access log. The socket speaks plaintext whatever TLS the TCP port has (a client certificate would
otherwise be needed for mutual TLS); the folder is the process's own (mode 0700), so no other user reaches it.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import grpc

MAX_MESSAGE_BYTES = 16 * 1024 * 1024
"""The largest message the loopback channel carries either way (the server's own send limit)."""


@contextlib.contextmanager
def private_socket() -> Iterator[str]:
    """A ``unix:`` address in a fresh folder only this user may enter, removed after the block."""
    folder = Path(tempfile.mkdtemp(prefix="npc-memory-"))
    try:
        yield f"unix:{folder / 'grpc.sock'}"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def open_channel(address: str) -> grpc.aio.Channel:
    """An asyncio channel to the server's private socket."""
    options = [("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
               ("grpc.max_send_message_length", MAX_MESSAGE_BYTES)]
    return grpc.aio.insecure_channel(address, options=options)


def call_metadata(key: str, request_id: str = "") -> tuple[tuple[str, str], ...]:
    """The metadata of a call made for a caller who presented ``key`` (none when the caller gave no key)."""
    metadata: list[tuple[str, str]] = []
    if key:
        metadata.append(("authorization", f"Bearer {key}"))
    if request_id:
        metadata.append(("x-request-id", request_id))
    return tuple(metadata)
