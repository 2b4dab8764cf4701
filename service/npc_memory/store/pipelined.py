"""One transaction in one psycopg pipeline: BEGIN leaves with the first statements, COMMIT with the last.

A write queues its statements (``Pipeline.queue``), sends them (``send``) and reads their rows later (``rows``):
a block that reads then writes costs two round trips whatever its size. It runs on psycopg's public pipeline
(``AsyncConnection.pipeline``), each statement prepared by psycopg (``prepare=True``: its cache, its names, its
``DEALLOCATE`` when a transaction of its own rolls back). The transaction is BEGIN and COMMIT sent as the
pipeline's first and last commands, not psycopg's ``transaction()``: inside a pipeline that adds a round trip
when it begins, one before COMMIT and one after it, which would double a store's round trips.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from psycopg import AsyncConnection, AsyncRawCursor, errors, pq

from npc_memory.store.compiled import Compiled

log = logging.getLogger(__name__)

_OPEN = (pq.TransactionStatus.INTRANS, pq.TransactionStatus.INERROR)


class Reply:
    """One queued statement; its rows can be read once ``Pipeline.send`` sent it (``Pipeline.rows``)."""

    __slots__ = ("cursor", "params", "statement")

    def __init__(self, statement: Compiled | bytes, params: Mapping[str, Any] | None) -> None:
        self.statement = statement
        """A compiled statement, or a bare command (BEGIN, COMMIT) sent unprepared."""
        self.params = params
        self.cursor: AsyncRawCursor[Any] | None = None
        """The cursor that sent it (None until sent): it holds the answer."""


class Pipeline:
    """Statements queued on one connection in psycopg's pipeline mode, sent on ``send``, answered in order."""

    def __init__(self, conn: AsyncConnection[Any]) -> None:
        self._conn = conn
        self._unsent: list[Reply] = []

    def queue(self, statement: Compiled, params: Mapping[str, Any]) -> Reply:
        """Queue ``statement`` (prepared by psycopg on this connection); its rows come binary, as dicts."""
        reply = Reply(statement, params)
        self._unsent.append(reply)
        return reply

    def command(self, command: bytes) -> None:
        """Queue a statement without parameters or rows (BEGIN, COMMIT)."""
        self._unsent.append(Reply(command, None))

    async def send(self) -> None:
        """Send everything queued so far: the statements run while the caller goes on.

        Each is adapted and sent on its own turn of the event loop, so a batch of long facts does not hold it.
        """
        unsent, self._unsent = self._unsent, []
        for reply in unsent:
            cur = reply.cursor = AsyncRawCursor(self._conn)
            if isinstance(reply.statement, Compiled):
                assert reply.params is not None
                await cur.execute(reply.statement.query, reply.statement.args(reply.params), prepare=True,
                                  binary=True)
            else:
                await cur.execute(reply.statement, prepare=False)

    async def rows(self, reply: Reply) -> list[dict[str, Any]]:
        """The rows of a statement already sent; PostgreSQL's error if it (or one before) failed.

        psycopg asks the server to flush (a Flush message, not a Sync: ``AsyncPipeline.sync`` could wait for ever
        with a big batch still in libpq's buffer, the server waiting for the rest of it) and reads up to it.
        """
        if reply.cursor is None:
            raise errors.InterfaceError("the statement's answer was asked before it was sent")
        found: list[dict[str, Any]] = await reply.cursor.fetchall()
        return found

    async def one(self, reply: Reply) -> dict[str, Any] | None:
        """The first row of ``rows(reply)``, or None."""
        found = await self.rows(reply)
        return found[0] if found else None


@asynccontextmanager
async def pipelined_transaction(conn: AsyncConnection[Any]) -> AsyncIterator[Pipeline]:
    """The block's queued statements in one transaction; committed if the block and every statement succeed.

    Any error (the block's, a statement's, a failed COMMIT) or a cancellation rolls the transaction back before it
    is raised. The connection must be this task's alone and autocommit, as the pool's are; it leaves pipeline mode
    on every path (one that cannot roll back is closed: the pool discards it).
    """
    pipe = Pipeline(conn)
    try:
        async with conn.pipeline():  # its end sends the Sync and reads every answer left
            pipe.command(b"BEGIN")
            yield pipe
            pipe.command(b"COMMIT")
            await pipe.send()
    except BaseException:
        await _roll_back(conn)
        raise


async def _roll_back(conn: AsyncConnection[Any]) -> None:
    """End a failed transaction (outside pipeline mode); the first error stands, a broken connection is closed."""
    if conn.closed or conn.info.transaction_status not in _OPEN:
        return
    try:
        await conn.execute(b"ROLLBACK", prepare=False)
    except (psycopg.Error, OSError) as exc:
        log.warning("rolling back a failed write transaction failed: %s", exc)
        await conn.close()
