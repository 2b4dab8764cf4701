"""One transaction in one libpq pipeline: BEGIN leaves with the first statements, COMMIT with the last.

psycopg's pipeline costs the event loop a turn and a flush per statement, and its ``transaction()`` inside a
pipeline adds a sync when the transaction begins, one before COMMIT and one after it (strace of a lone store
showed all of them). A single store queues ~10 statements: in py-spy samples of caller-vector stores, psycopg
and the loop's turns were two thirds of the process's CPU. Here the statements are queued on libpq directly
(``Pipeline.queue``: prepared once per connection, as psycopg would, parameters dumped and rows made by psycopg's
own adapters), a round trip goes out on ``sync``, and the answers are read when a statement's rows are asked for:
a block that reads then writes costs two round trips and two waits.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import logging
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import psycopg
from psycopg import AsyncConnection, errors, pq
from psycopg.adapt import PyFormat

from npc_memory.errors import UnavailableError
from npc_memory.store.compiled import Compiled
from npc_memory.store.direct import NO_SUCH_STATEMENT, ready, row_maker, session

log = logging.getLogger(__name__)

T = TypeVar("T")

_OPEN = (pq.TransactionStatus.INTRANS, pq.TransactionStatus.INERROR)
_SYNC = object()
"""The queue's mark of a sync point: its answer is one PIPELINE_SYNC result."""


class StatementsLostError(UnavailableError):
    """The database session no longer has a statement prepared here: the transaction failed, the next one prepares.

    psycopg deallocates every prepared statement of a connection after a transaction of its own rolls back (its
    ``DEALLOCATE ALL``), ours included.
    """


class Reply:
    """One queued statement's answer, read once its round trip is back (``Pipeline.rows``)."""

    __slots__ = ("error", "name", "result", "sent")

    def __init__(self, name: bytes | None) -> None:
        self.name = name
        """The prepared statement's name (None for a bare command); it keeps the statement's row loaders."""
        self.result: pq.abc.PGresult | None = None
        self.error: Exception | None = None
        self.sent = False
        """A sync point followed it: its answer will come."""


class _Prepare:
    """A statement being prepared in this pipeline: known on the connection only once PostgreSQL says so."""

    __slots__ = ("name",)

    def __init__(self, name: bytes) -> None:
        self.name = name


@functools.cache
def _formats(count: int) -> list[PyFormat]:
    return [PyFormat.AUTO] * count


_PREFIX = b"npc_pipe_"


@functools.cache
def _prepared_name(query: bytes, types: tuple[int, ...]) -> bytes:
    # The parameters' types are part of the name, as in psycopg: a None where a value was sends another type.
    digest = hashlib.blake2b(query, digest_size=8)
    digest.update(repr(types).encode())
    return _PREFIX + digest.hexdigest().encode()


class Pipeline:
    """Statements queued on one connection in libpq's pipeline mode, answered in order."""

    def __init__(self, conn: AsyncConnection[Any]) -> None:
        self._conn = conn
        self._pgconn = conn.pgconn
        self._session = session(conn)
        self._waiting: deque[Reply | _Prepare | object] = deque()
        """What was sent and not yet read, in order: replies, prepares and sync marks."""
        self._preparing: set[bytes] = set()
        self._prepared_here: set[bytes] = set()
        self._failed: Exception | None = None
        """PostgreSQL's first error in this pipeline: every later answer is that error too."""
        self._half_read: pq.abc.PGresult | None = None
        self._unsent: list[Reply] = []

    def queue(self, statement: Compiled, params: Mapping[str, Any]) -> Reply:
        """Queue ``statement`` (prepared on first use on this connection); its rows come binary, as dicts."""
        dumper = self._session.dumper
        values = dumper.dump_sequence(statement.args(params), _formats(len(statement.names)))
        name = _prepared_name(statement.query, dumper.types)
        pgconn = self._pgconn
        if name not in self._session.prepared and name not in self._preparing:
            pgconn.send_prepare(name, statement.query, param_types=dumper.types)
            self._preparing.add(name)
            self._waiting.append(_Prepare(name))
        pgconn.send_query_prepared(name, values, param_formats=dumper.formats, result_format=pq.Format.BINARY)
        reply = Reply(name)
        self._waiting.append(reply)
        self._unsent.append(reply)
        return reply

    def command(self, command: bytes) -> Reply:
        """Queue a statement without parameters or rows (BEGIN, COMMIT, ROLLBACK)."""
        self._pgconn.send_query_params(command, None)
        reply = Reply(None)
        self._waiting.append(reply)
        return reply

    async def sync(self) -> None:
        """Send everything queued so far and a sync point: the statements run, their answers come back."""
        self._pgconn.pipeline_sync()  # libpq sends its buffer with it
        self._waiting.append(_SYNC)
        for reply in self._unsent:
            reply.sent = True
        self._unsent.clear()
        await self._flush()

    async def rows(self, reply: Reply) -> list[dict[str, Any]]:
        """The rows of a statement queued before the last ``sync``; PostgreSQL's error if it (or one before) failed."""
        if not reply.sent:
            raise errors.InterfaceError("the statement's answer was asked before a sync sent it")
        while reply.result is None and reply.error is None:
            await self._read_one()
        if reply.error is not None:
            raise reply.error
        if reply.result is None or reply.name is None:
            raise errors.InterfaceError("rows were asked of a command")
        return row_maker(self._conn, self._session, reply.name, reply.result)

    async def one(self, reply: Reply) -> dict[str, Any] | None:
        """The first row of ``rows(reply)``, or None."""
        found = await self.rows(reply)
        return found[0] if found else None

    async def settle(self) -> None:
        """Read every answer sent for; raise the pipeline's first error, if any."""
        while self._waiting:
            await self._read_one()
        if self._failed is not None:
            raise self._failed

    async def _read_one(self) -> None:
        """Read the answer of the oldest waiting entry."""
        if not self._waiting:
            raise errors.InterfaceError("no answer is due: sync the pipeline first")
        entry = self._waiting[0]
        result: pq.abc.PGresult | None
        if self._half_read is not None:  # a cancelled read got the result but not its end
            result, self._half_read = self._half_read, None
        else:
            result = await self._next_result()
        if entry is _SYNC:
            if result is None or result.status != pq.ExecStatus.PIPELINE_SYNC:
                raise errors.InternalError("the pipeline's sync point did not answer")
            self._waiting.popleft()
            return
        if result is None:
            raise errors.InternalError("a queued statement had no answer")
        self._half_read = result
        while await self._next_result() is not None:  # one statement, one result, then its end
            pass
        self._half_read = None
        self._waiting.popleft()
        error = self._error_of(result)
        if isinstance(entry, _Prepare):
            self._preparing.discard(entry.name)
            if error is None:
                self._session.prepared.setdefault(entry.name, None)
                self._prepared_here.add(entry.name)
        elif isinstance(entry, Reply):
            entry.result, entry.error = (None, error) if error is not None else (result, None)

    def _error_of(self, result: pq.abc.PGresult) -> Exception | None:
        status = result.status
        if status in (pq.ExecStatus.COMMAND_OK, pq.ExecStatus.TUPLES_OK):
            return None
        if status == pq.ExecStatus.PIPELINE_ABORTED:
            return self._failed or errors.InternalError("aborted in the pipeline")
        error: Exception = errors.error_from_result(result, encoding=self._conn.info.encoding)
        if result.error_field(pq.DiagnosticField.SQLSTATE) == NO_SUCH_STATEMENT:
            self._forget_lost()
            error = StatementsLostError("a prepared statement was gone from the database session")
        if self._failed is None:
            self._failed = error
        return error

    def _forget_lost(self) -> None:
        """Every statement of ours prepared before this pipeline is gone with the one that failed: prepare them again.

        Not those this pipeline prepared before the failure (they exist), nor ``fetch_direct``'s (which prepares its
        own again when it finds one gone).
        """
        prepared = self._session.prepared
        for name in [n for n in prepared if n.startswith(_PREFIX) and n not in self._prepared_here]:
            del prepared[name]

    async def _next_result(self) -> pq.abc.PGresult | None:
        pgconn = self._pgconn
        loop = asyncio.get_running_loop()
        while True:
            pgconn.consume_input()
            if not pgconn.is_busy():
                return pgconn.get_result()
            await ready(loop, pgconn.socket, writing=False)

    async def _flush(self) -> None:
        """Send libpq's buffer; reading meanwhile, so a server blocked on its answers keeps reading ours."""
        pgconn = self._pgconn
        loop = asyncio.get_running_loop()
        while pgconn.flush():
            if await ready(loop, pgconn.socket, writing=True, or_readable=True):
                pgconn.consume_input()

    async def abandon(self) -> None:
        """After a failure: read what is due, roll back an open transaction, leave pipeline mode."""
        if self._waiting and self._waiting[-1] is not _SYNC:
            await self.sync()
        while self._waiting:
            await self._read_one()
        if self._pgconn.transaction_status in _OPEN:
            self.command(b"ROLLBACK")
            await self.sync()
            while self._waiting:
                await self._read_one()
        self._pgconn.exit_pipeline_mode()


@asynccontextmanager
async def pipelined_transaction(conn: AsyncConnection[Any]) -> AsyncIterator[Pipeline]:
    """The block's queued statements in one transaction; committed if the block and every statement succeed.

    Any error (the block's, a statement's, a failed COMMIT) or a cancellation rolls the transaction back before it
    is raised. The connection must be this task's alone and autocommit, as the pool's are; it leaves pipeline mode
    on every path (a connection that cannot, being broken or cancelled mid-answer, is busy: the pool discards it).
    """
    pipe = Pipeline(conn)
    conn.pgconn.enter_pipeline_mode()
    pipe.command(b"BEGIN")
    try:
        yield pipe
        pipe.command(b"COMMIT")
        await pipe.sync()
        await pipe.settle()
    except BaseException:
        try:
            await pipe.abandon()
        except (psycopg.Error, OSError) as exc:  # the first error stands; the pool discards a closed connection
            log.warning("rolling back a failed write transaction failed: %s", exc)
            await conn.close()
        raise
    conn.pgconn.exit_pipeline_mode()


async def in_transaction(conn: AsyncConnection[Any], block: Callable[[Pipeline], Awaitable[T]]) -> T:
    """``block`` in a ``pipelined_transaction``; run again once if the session had lost its prepared statements.

    The failed attempt wrote nothing, and the second prepares every statement afresh on this connection, which no
    one else uses meanwhile. ``block`` must be safe to run twice up to its writes' answers (it queues, reads and
    plans; nothing outside the transaction).
    """
    try:
        async with pipelined_transaction(conn) as pipe:
            return await block(pipe)
    except StatementsLostError:
        log.info("the database session lost its prepared statements: the write transaction runs again")
    async with pipelined_transaction(conn) as pipe:
        return await block(pipe)
