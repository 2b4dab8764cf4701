"""The connection pool; driver failures become the service's own errors here and nowhere else."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import psycopg
from pgvector.psycopg import register_vector_async
from psycopg.rows import DictRow, dict_row
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from npc_memory.errors import ConflictError, UnavailableError

Connection = psycopg.AsyncConnection[DictRow]

# While the last ping failed, a call waits this long for a connection, not the whole connect timeout: during an
# outage every call hung 5 s before its UNAVAILABLE, holding the client's deadline and a server slot for nothing.
DOWN_WAIT_SECONDS = 0.25


@dataclass(frozen=True)
class PoolSettings:
    """How many connections to keep and how long to wait for one."""

    min_size: int = 2
    """Connections opened at start."""
    max_size: int = 10
    """Upper bound on open connections."""
    connect_timeout: float = 5.0
    """Seconds to wait for a connection before answering UNAVAILABLE."""


async def _configure(conn: Connection) -> None:
    await register_vector_async(conn)


class Database:
    """An async pool of autocommit connections with pgvector adapters registered on each."""

    def __init__(self, url: str, settings: PoolSettings) -> None:
        self.url = url
        self._timeout = settings.connect_timeout
        self._sizes = (settings.min_size, settings.max_size)
        self._down = False
        """The last ping failed (the health watcher pings every half second)."""
        self._nudged = False
        """A fresh connection attempt was started in this outage (see ``_reconnect_now``)."""
        self._pool: AsyncConnectionPool[Connection] = AsyncConnectionPool(
            url,
            min_size=settings.min_size,
            max_size=settings.max_size,
            kwargs={"autocommit": True, "row_factory": dict_row},
            configure=_configure,
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
        """Close every connection."""
        await self._pool.close()

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[Connection]:
        """A pooled connection; outages surface as UnavailableError, serialization races as ConflictError."""
        wait = DOWN_WAIT_SECONDS if self._down else self._timeout
        try:
            async with self._pool.connection(timeout=wait) as conn:
                yield conn
        except PoolTimeout as exc:
            raise UnavailableError(f"no database connection within {wait}s") from exc
        except psycopg.errors.SerializationFailure as exc:
            raise ConflictError(str(exc)) from exc
        except psycopg.OperationalError as exc:
            raise UnavailableError(f"database error: {exc}") from exc

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Connection]:
        """A pooled connection inside one transaction: committed on success, rolled back on any error."""
        async with self.connection() as conn, conn.transaction():
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
        delay as long as the outage itself. Growing the pool by one starts a fresh attempt at once; the extra
        connection is closed later, like any idle one above the minimum.
        """
        try:
            probe = await psycopg.AsyncConnection.connect(self.url, connect_timeout=2)
        except psycopg.OperationalError:
            return  # still down: the pool's own attempts go on
        await probe.close()
        low, high = self._sizes
        self._nudged = True
        await self._pool.resize(low + 1, max(high, low + 1))
        await self._pool.resize(low, high)
