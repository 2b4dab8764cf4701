"""store/pipelined.py against the real PostgreSQL: all or nothing, and the connection clean after either.

The write transaction sends BEGIN with its first statements and COMMIT with its last (no sync in between), so what
psycopg's transaction() did for us is checked here: a Python error, a statement PostgreSQL refuses, a failed
COMMIT and a cancelled task each leave nothing written and the pooled connection idle, ready for the next call.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable

import psycopg
import pytest
from npc_memory.engine import MemoryEngine
from npc_memory.store.pipelined import pipelined_transaction
from npc_memory.store.pool import Connection
from psycopg import pq

TABLE = "pipelined_tx_probe"


async def _rows(engine: MemoryEngine, tag: str) -> int:
    async with engine.db.connection() as conn:
        cur = await conn.execute(f"SELECT count(*) AS n FROM {TABLE} WHERE tag = %s", (tag,))
        row = await cur.fetchone()
    assert row is not None
    return int(row["n"])


async def _idle(conn: Connection) -> None:
    """The connection is out of any transaction and answers (checked before the pool could roll it back itself)."""
    assert conn.info.transaction_status == pq.TransactionStatus.IDLE
    await conn.execute("SELECT 1")


@pytest.fixture
async def table(engine: MemoryEngine) -> None:
    async with engine.db.connection() as conn:
        await conn.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (tag text NOT NULL, n int NOT NULL CHECK (n >= 0),"
                           " UNIQUE (tag, n) DEFERRABLE INITIALLY DEFERRED)")


@pytest.mark.usefixtures("table")
async def test_the_block_commits_with_one_sync(engine: MemoryEngine) -> None:
    """Reads answered inside the block, writes after them: all committed."""
    tag = uuid.uuid4().hex
    async with engine.db.connection() as conn:
        async with pipelined_transaction(conn):
            cur = await conn.execute("SELECT 41 + 1 AS n")
            row = await cur.fetchone()
            assert row == {"n": 42}
            await conn.execute(f"INSERT INTO {TABLE} VALUES (%s, 1), (%s, 2)", (tag, tag))
        await _idle(conn)
    assert await _rows(engine, tag) == 2


async def _python_error(conn: Connection, tag: str) -> None:
    await conn.execute(f"INSERT INTO {TABLE} VALUES (%s, 1)", (tag,))
    raise RuntimeError("planned")


async def _refused_statement(conn: Connection, tag: str) -> None:
    """The second INSERT breaks a CHECK: PostgreSQL's error surfaces at the end, after the first INSERT ran."""
    await conn.execute(f"INSERT INTO {TABLE} VALUES (%s, 1)", (tag,))
    await conn.execute(f"INSERT INTO {TABLE} VALUES (%s, -1)", (tag,))


async def _failed_commit(conn: Connection, tag: str) -> None:
    """A deferred UNIQUE: the statement succeeds, COMMIT itself fails."""
    await conn.execute(f"INSERT INTO {TABLE} VALUES (%s, 3), (%s, 3)", (tag, tag))


Block = Callable[[Connection, str], Awaitable[None]]


@pytest.mark.usefixtures("table")
@pytest.mark.parametrize(("block", "raised"), [
    (_python_error, RuntimeError), (_refused_statement, psycopg.errors.CheckViolation),
    (_failed_commit, psycopg.errors.UniqueViolation),
])
async def test_a_failure_writes_nothing(engine: MemoryEngine, block: Block, raised: type[Exception]) -> None:
    """A Python error, a refused statement, a failed COMMIT: raised as is, nothing written, the connection idle."""
    tag = uuid.uuid4().hex

    async def inside(conn: Connection) -> None:
        async with pipelined_transaction(conn):
            await block(conn, tag)

    async with engine.db.connection() as conn:
        with pytest.raises(raised):
            await inside(conn)
        await _idle(conn)
    assert await _rows(engine, tag) == 0


@pytest.mark.usefixtures("table")
async def test_a_cancelled_task_rolls_back(engine: MemoryEngine) -> None:
    """Cancelled while it waits inside the block (as a store waits for the model): nothing written."""
    tag = uuid.uuid4().hex
    inside = asyncio.Event()
    after: list[pq.TransactionStatus] = []

    async def store() -> None:
        async with engine.db.connection() as conn:
            try:
                async with pipelined_transaction(conn):
                    await conn.execute(f"INSERT INTO {TABLE} VALUES (%s, 1)", (tag,))
                    inside.set()
                    await asyncio.sleep(30)
            finally:
                after.append(conn.info.transaction_status)

    task = asyncio.ensure_future(store())
    await asyncio.wait_for(inside.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert after == [pq.TransactionStatus.IDLE]
    assert await _rows(engine, tag) == 0
