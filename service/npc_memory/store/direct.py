"""A compiled statement run through libpq directly: every held-scope search's sync, and the reads (``read_direct``).

psycopg's cursor costs the event loop CPU per statement around the round trip (its execute
generator, prepared-statement bookkeeping, waiting and row making); for the held scope's sync, sent by every
search, that was more than the database's own work. Here the statement is prepared once per connection under a
name of its own, its parameters go as text (the server types them from the prepared statement), and the result's
rows are made by psycopg's own loaders (``Transformer``), so they are the values ``fetch_all`` gives.

A prepared statement's result always has the same columns, so each connection keeps, per statement, the transformer
whose loaders were chosen for them and the columns' names: choosing the loaders again was a measurable part of every
sync in the server (the caches are cold between requests). That per-connection ``Session`` and its row making
are shared with the write transaction's pipeline (store/pipelined.py).
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
from collections.abc import Callable, Mapping
from typing import Any

from psycopg import AsyncConnection, errors, pq
from psycopg import abc as psycopg_abc
from psycopg.adapt import PyFormat, Transformer

from npc_memory.store.compiled import Compiled
from npc_memory.store.pool import Database

_Loaders = tuple[psycopg_abc.Transformer, list[str]]


class Session:
    """What this process keeps for one open connection: its statements prepared here, a transformer to dump with."""

    __slots__ = ("dumper", "prepared")

    def __init__(self, conn: AsyncConnection[Any]) -> None:
        self.prepared: dict[bytes, _Loaders | None] = {}
        """The statements prepared on the connection, each with its row loaders and column names once it answered."""
        self.dumper: psycopg_abc.Transformer = Transformer(conn)


_SESSION = "_npc_memory_session"
"""The attribute of a connection holding its ``Session``: a connection the pool replaces starts with none prepared.

Not a weak-keyed dictionary: the session's transformers refer to the connection, so its entry would never go.
"""
NO_SUCH_STATEMENT = b"26000"
"""SQLSTATE of a prepared statement the session does not have (DISCARD ALL, say): prepare it again."""


def session(conn: AsyncConnection[Any]) -> Session:
    """The kept state of ``conn``."""
    found: Session | None = getattr(conn, _SESSION, None)
    if found is None:
        found = Session(conn)
        setattr(conn, _SESSION, found)
    return found


def row_maker(
    conn: AsyncConnection[Any], kept: Session, name: bytes, result: pq.abc.PGresult
) -> list[dict[str, Any]]:
    """The rows of ``result`` (an answer of prepared statement ``name``) as dicts, by psycopg's own loaders.

    A prepared statement's result always has the same columns, so the loaders chosen for its first answer are kept.
    """
    loaders = kept.prepared.get(name)
    if loaders is None:
        tx: psycopg_abc.Transformer = Transformer(conn)
        tx.set_pgresult(result)
        loaders = kept.prepared[name] = (tx, [(result.fname(i) or b"").decode() for i in range(result.nfields)])
    else:
        tx = loaders[0]
        tx.set_pgresult(result, set_loaders=False)
    names = loaders[1]
    return tx.load_rows(0, result.ntuples, lambda values: dict(zip(names, values, strict=True)))


@functools.cache
def statement_name(statement: Compiled) -> bytes:
    """A name for ``statement`` on every connection, from its text (hashed once per statement, not per call)."""
    return b"npc_direct_" + hashlib.blake2b(statement.query, digest_size=8).hexdigest().encode()


async def fetch_direct(
    conn: AsyncConnection[Any], statement: Compiled, params: Mapping[str, Any],
    beside: Callable[[], object] | None = None,
) -> list[dict[str, Any]]:
    """``statement``'s rows as dicts by column name, as ``compiled.fetch_all`` would return them.

    ``beside`` runs once the statement is sent, before its answer is awaited: work of the caller's that would
    otherwise wait for the answer (the loop would sleep while the database works, and wake when it is done).
    The connection must be this task's alone (a pooled connection checked out) and outside a pipeline. A failed
    statement raises psycopg's error for it; a cancelled wait leaves the connection busy, so the pool discards it.
    """
    name = statement_name(statement)
    kept = session(conn)
    if name not in kept.prepared:
        await _prepare(conn, name, statement)
        kept.prepared[name] = None
    args = kept.dumper.dump_sequence(statement.args(params), _text(len(statement.names)))

    def execute(pgconn: pq.abc.PGconn) -> None:
        pgconn.send_query_prepared(name, args, result_format=pq.Format.BINARY)

    result = await _round_trip(conn, execute, beside)
    if (result.status == pq.ExecStatus.FATAL_ERROR
            and result.error_field(pq.DiagnosticField.SQLSTATE) == NO_SUCH_STATEMENT):
        await _prepare(conn, name, statement)
        result = await _round_trip(conn, execute)
    _raise_for(conn, result)
    return row_maker(conn, kept, name, result)


async def read_direct(db: Database, statement: Compiled, params: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``fetch_direct`` on the kept connection, or a pooled one while it is busy.

    The reads are small statements (a memory, a page, a history, a profile), and the pool's bookkeeping cost
    more than they do (store/pool.py ``kept_connection``).
    """
    async with db.kept_connection() as conn:
        return await fetch_direct(conn, statement, params)


@functools.cache
def _text(count: int) -> list[PyFormat]:
    return [PyFormat.TEXT] * count


async def _prepare(conn: AsyncConnection[Any], name: bytes, statement: Compiled) -> None:
    def prepare(pgconn: pq.abc.PGconn) -> None:
        pgconn.send_prepare(name, statement.query)

    _raise_for(conn, await _round_trip(conn, prepare))


def _raise_for(conn: AsyncConnection[Any], result: pq.abc.PGresult) -> None:
    if result.status not in (pq.ExecStatus.TUPLES_OK, pq.ExecStatus.COMMAND_OK):
        raise errors.error_from_result(result, encoding=conn.info.encoding)


async def _round_trip(
    conn: AsyncConnection[Any], send: Callable[[pq.abc.PGconn], None], beside: Callable[[], object] | None = None
) -> pq.abc.PGresult:
    """Send with ``send(pgconn)``, run ``beside``, wait for the answer without blocking the loop; its one result.

    psycopg's own ``conn.wait(generators.execute(pgconn))`` does the same (and on cancellation cancels the statement
    in the server instead of leaving the pool to discard the connection), but its waits cost the loop more CPU per
    sync (measured against this in one run), the cost this module exists to cut.
    """
    pgconn = conn.pgconn
    send(pgconn)
    loop = asyncio.get_running_loop()
    while pgconn.flush():  # the rest of the message did not fit in the socket's buffer
        await ready(loop, pgconn.socket, writing=True)
    if beside is not None:
        beside()
    while True:
        pgconn.consume_input()
        if not pgconn.is_busy():
            break
        await ready(loop, pgconn.socket, writing=False)
    result = pgconn.get_result()
    if result is None:
        raise errors.InternalError("no result for the statement")
    while pgconn.get_result() is not None:  # one statement: one result, then the end
        pass
    return result


async def ready(loop: asyncio.AbstractEventLoop, fileno: int, writing: bool, or_readable: bool = False) -> bool:
    """Wait until the socket can be written (``writing``) or read; True if it was found readable.

    ``or_readable``: a wait to write also ends when the socket can be read.
    """
    future: asyncio.Future[bool] = loop.create_future()

    def wake(readable: bool) -> None:
        if not future.done():
            future.set_result(readable)

    reading = not writing or or_readable
    if writing:
        loop.add_writer(fileno, wake, False)
    if reading:
        loop.add_reader(fileno, wake, True)
    try:
        return await future
    finally:
        if writing:
            loop.remove_writer(fileno)
        if reading:
            loop.remove_reader(fileno)
