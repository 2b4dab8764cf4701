"""A byte-forwarding proxy in front of the test PostgreSQL that can end a session at one chosen protocol moment.

An outage ends sessions wherever they are; the moment that matters can be sub-millisecond wide (PostgreSQL
answered a COMMIT and is told to shut down before it says it is ready for the next query). The proxy forwards
both directions unchanged and reads the server's messages; once armed, it replaces the next message that matches
(the ReadyForQuery after a COMMIT, or the answer of a transaction's first statement after BEGIN) with what a
shutting-down server sends there (an ErrorResponse FATAL 57P01) and closes both sides.
PostgreSQL itself is real: what it answered before the cut stands (a COMMIT it acknowledged is committed).
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import psycopg

READY_FOR_QUERY = b"Z"
COMMAND_COMPLETE = b"C"
FATAL_SHUTDOWN = b"".join((
    b"SFATAL\0", b"VFATAL\0", b"C57P01\0", b"Mterminating connection due to administrator command\0", b"\0"))
"""The fields of the ErrorResponse a backend sends when PostgreSQL shuts down in fast mode."""


@dataclass
class Cut:
    """Which message to replace: the ReadyForQuery after COMMIT (``after_commit``), or a transaction's first answer.

    The answer of the first statement after BEGIN: mid-transaction, as the write pipeline sends no sync point
    before its COMMIT.
    """

    after_commit: bool
    done: asyncio.Event = field(default_factory=asyncio.Event)

    def matches(self, kind: bytes, last_tag: bytes) -> bool:
        """Whether a message of ``kind``, after a command tagged ``last_tag``, is the one to cut."""
        if self.after_commit:
            return kind == READY_FOR_QUERY and last_tag == b"COMMIT"
        return kind == COMMAND_COMPLETE and last_tag == b"BEGIN"


class CutProxy:
    """Listens on 127.0.0.1; each client connection is forwarded to the server of ``database_url``."""

    def __init__(self, database_url: str) -> None:
        self._database_url = database_url
        self._target = psycopg.conninfo.conninfo_to_dict(database_url)
        self._server: asyncio.Server | None = None
        self.cut: Cut | None = None
        self.url = ""

    async def _open_target(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        host = str(self._target["host"])  # the test database's URL names its server
        port = int(self._target.get("port") or 5432)
        if host.startswith("/"):
            return await asyncio.open_unix_connection(f"{host}/.s.PGSQL.{port}")
        return await asyncio.open_connection(host, port)

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await self._open_target()

        async def upstream() -> None:
            while data := await reader.read(65536):
                up_writer.write(data)
                await up_writer.drain()

        async def downstream() -> None:
            last_tag = b""
            while True:
                head = await up_reader.readexactly(5)
                kind, length = head[:1], struct.unpack("!I", head[1:])[0]
                body = await up_reader.readexactly(length - 4)
                cut = self.cut
                matched = cut is not None and cut.matches(kind, last_tag)
                if kind == COMMAND_COMPLETE:
                    last_tag = body.rstrip(b"\0").split(b" ")[0]
                if cut is not None and matched:
                    self.cut = None
                    writer.write(b"E" + struct.pack("!I", 4 + len(FATAL_SHUTDOWN)) + FATAL_SHUTDOWN)
                    await writer.drain()
                    cut.done.set()
                    return
                writer.write(head + body)
                await writer.drain()

        tasks = [asyncio.create_task(upstream()), asyncio.create_task(downstream())]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
            for w in (writer, up_writer):
                w.close()
                with contextlib.suppress(OSError, asyncio.CancelledError):
                    await w.wait_closed()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError, OSError, asyncio.IncompleteReadError):
                    await task

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[CutProxy]:
        """Serve until the block ends; ``url`` is the database URL through the proxy meanwhile."""
        self._server = await asyncio.start_server(self._client, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        self.url = psycopg.conninfo.make_conninfo(self._database_url, host="127.0.0.1", port=port, sslmode="disable",
                                                  gssencmode="disable")
        try:
            yield self
        finally:
            self._server.close()
            await self._server.wait_closed()
