"""The connection pool; driver failures become the service's own errors here and nowhere else."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from functools import partial

import psycopg
from pgvector.psycopg import register_vector_async
from psycopg import sql
from psycopg.rows import DictRow, dict_row
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from npc_memory.config.database import PlanCacheMode, PoolSettings
from npc_memory.errors import ConflictError, UnavailableError
from npc_memory.ops.tracing import span

Connection = psycopg.AsyncConnection[DictRow]

log = logging.getLogger(__name__)

# While the last ping failed, a call waits this long for a connection, not the whole connect timeout: during an
# outage every call hung 5 s before its UNAVAILABLE, holding the client's deadline and a server slot for nothing.
DOWN_WAIT_SECONDS = 0.25
KEEPS_ONE_FROM = 4
"""A pool of at least this many connections lends one for good (``kept_connection``); a smaller one keeps them all."""

STATEMENT_SPAN = "db.statement"
"""The trace span of one use of a connection: a statement, or a pipeline of them (ops/tracing.py)."""
TRANSACTION_SPAN = "db.transaction"
"""The trace span of one transaction, its statements inside."""


PREPARED_MAX = 512
"""Statements psycopg keeps prepared per connection (its default, 100, is fewer than the search's variants, the
writes and the reads together: past it the least used is deallocated and prepared again when next run)."""
SET_PLAN_CACHE_MODE = "SET plan_cache_mode = {mode}"
CITUS_HERE = "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') AS citus"


async def _configure(conn: Connection, plan_cache_mode: PlanCacheMode) -> None:
    conn.prepared_max = PREPARED_MAX
    await register_vector_async(conn)
    mode = await _plan_cache_mode(conn, plan_cache_mode)
    await conn.execute(sql.SQL(SET_PLAN_CACHE_MODE).format(mode=sql.Literal(mode)))


async def _plan_cache_mode(conn: Connection, configured: PlanCacheMode) -> PlanCacheMode:
    """The configured mode, except on a Citus coordinator: there every statement is planned for its parameters.

    Citus routes a statement to the worker holding the player's shard by the value of ``user_id``; a generic plan
    holds it as a parameter, and Citus refuses to plan it ("could not create distributed plan").
    """
    if configured == "force_custom_plan":
        return configured
    cur = await conn.execute(CITUS_HERE)
    row = await cur.fetchone()
    return "force_custom_plan" if row is not None and row["citus"] else configured


UNAVAILABLE_TEXT = "the database is unavailable; the server log has the details"


@contextmanager
def _session_errors(conn: Connection) -> Iterator[None]:
    """Any driver error raised once the connection's session is gone is the outage's: UnavailableError.

    An outage ends a session wherever it is, and not every moment gives an OperationalError: PostgreSQL shutting
    down between its answer to COMMIT and the sync point's left the write path with an InternalError of its own
    (tests/resilience/test_cut_write.py), which reached clients as INTERNAL. A driver error on a connection that is
    still open is not an outage, and goes on as it is.
    """
    try:
        yield
    except (psycopg.Error, OSError) as exc:
        if isinstance(exc, psycopg.OperationalError) or not conn.closed:
            raise
        log.warning("database session ended: %s: %s", type(exc).__name__, " ".join(str(exc).split()))
        raise UnavailableError(UNAVAILABLE_TEXT) from exc


class Database:
    """An async pool of autocommit connections, each with pgvector adapters registered and its plan cache mode set."""

    def __init__(self, url: str, settings: PoolSettings) -> None:
        self.url = url
        self._timeout = settings.connect_timeout
        self._sizes = (settings.min_size, settings.max_size)
        self._down = False
        """The last ping failed (the health watcher pings every half second)."""
        self._nudged = False
        """A fresh connection attempt was started in this outage (see ``_reconnect_now``)."""
        self._kept: Connection | None = None
        """The connection ``kept_connection`` lends (None until first asked, or after its use failed)."""
        self._kept_busy = False
        self._closing = False
        self._pool: AsyncConnectionPool[Connection] = AsyncConnectionPool(
            url,
            min_size=settings.min_size,
            max_size=settings.max_size,
            kwargs={"autocommit": True, "row_factory": dict_row},
            configure=partial(_configure, plan_cache_mode=settings.plan_cache_mode),
            connection_class=psycopg.AsyncConnection[DictRow],
            timeout=settings.connect_timeout,
            open=False,
            name="npc-memory",
        )

    async def open(self) -> None:
        """Open the pool; raise UnavailableError if the database cannot be reached in time."""
        try:
            await self._pool.open(wait=True, timeout=self._timeout)
        except PoolTimeout as exc:
            raise UnavailableError(f"database unreachable: {exc}") from exc

    def stats(self) -> dict[str, int]:
        """The pool's counters (size, idle, waiting, total wait in ms) for the metrics."""
        return self._pool.get_stats()

    async def close(self) -> None:
        """Close every connection (the kept one is given back first, or when its use ends)."""
        self._closing = True
        kept, self._kept = self._kept, None
        if kept is not None and not self._kept_busy:
            await self._pool.putconn(kept)
        await self._pool.close()

    @contextmanager
    def mapped_errors(self) -> Iterator[float]:
        """The driver's failures inside the block as ours; yields how long a call may wait for a connection now."""
        wait = DOWN_WAIT_SECONDS if self._down else self._timeout
        try:
            yield wait
        except PoolTimeout as exc:
            raise UnavailableError(f"no database connection within {wait}s") from exc
        except psycopg.errors.SerializationFailure as exc:
            raise ConflictError("a concurrent change to the same memories won; retry the call") from exc
        except psycopg.OperationalError as exc:
            # PostgreSQL's own text (host names, roles, server messages) stays in our log, out of the answer.
            log.warning("database error: %s", " ".join(str(exc).split()))
            raise UnavailableError(UNAVAILABLE_TEXT) from exc

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[Connection]:
        """A pooled connection; outages surface as UnavailableError, serialization races as ConflictError."""
        with span(STATEMENT_SPAN), self.mapped_errors() as wait:
            async with self._pool.connection(timeout=wait) as conn:
                with _session_errors(conn):
                    yield conn

    @asynccontextmanager
    async def kept_connection(self) -> AsyncIterator[Connection]:
        """The connection kept for a small statement run on every request, when free; else a pooled one.

        Taking a connection from the pool and returning it (the pool's lock and bookkeeping and two context managers,
        run cold between requests) cost more of every held scope's sync than the statement itself takes in
        PostgreSQL. So one connection is borrowed from the pool for good (a pool of at least
        ``KEEPS_ONE_FROM``) and lent to one use at a time; a use meanwhile takes a pooled one as before. A kept
        connection whose use fails goes back to the pool (which closes it if it is broken or still busy after a
        cancelled wait), and the next use borrows another.
        """
        if self._kept_busy or self._closing or self._sizes[1] < KEEPS_ONE_FROM:
            async with self.connection() as pooled:
                yield pooled
            return
        self._kept_busy = True
        conn = self._kept
        done = False
        try:
            with span(STATEMENT_SPAN), self.mapped_errors() as wait:
                if conn is None:
                    conn = self._kept = await self._pool.getconn(timeout=wait)
                with _session_errors(conn):
                    yield conn
            done = True
        finally:
            self._kept_busy = False
            if conn is not None and (not done or self._closing):
                self._kept = None
                await self._pool.putconn(conn)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Connection]:
        """A pooled connection inside one transaction: committed on success, rolled back on any error."""
        with span(TRANSACTION_SPAN), self.mapped_errors() as wait:
            async with self._pool.connection(timeout=wait) as conn:
                with _session_errors(conn):
                    async with conn.transaction():
                        yield conn

    async def ping(self) -> None:
        """Raise UnavailableError unless a trivial query answers; until one does, calls wait only briefly."""
        try:
            async with self.connection() as conn:
                await conn.execute("SELECT 1")
        except (UnavailableError, TimeoutError, asyncio.CancelledError):  # the watcher's own timeout cancels us
            was_down, self._down = self._down, True
            if was_down and not self._nudged:
                await self._reconnect_now()
            raise
        self._down = self._nudged = False

    async def _reconnect_now(self) -> None:
        """If the database answers a connection of our own, have the pool connect now rather than after its backoff.

        The pool retries a lost connection after 1, 2, 4, 8 … s: once the database is back it could sit out a
        delay as long as the outage itself. Growing the pool starts fresh attempts at once: by its minimum and one
        more, because ``kept_connection`` takes the first connection back for good: grown by one, the searches got it
        and the stores and the health ping waited out the backoff (docs/decisions/outage-writes.md). The extra
        connections are closed later, like any idle one above the minimum.
        """
        try:
            probe = await psycopg.AsyncConnection.connect(self.url, connect_timeout=2)
        except psycopg.OperationalError:
            return  # still down: the pool's own attempts go on
        await probe.close()
        low, high = self._sizes
        self._nudged = True
        grown = low + low + 1
        await self._pool.resize(grown, max(high, grown))
        await self._pool.resize(low, high)
