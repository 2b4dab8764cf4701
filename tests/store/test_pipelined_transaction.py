"""store/pipelined.py against the real PostgreSQL: all or nothing, and the connection clean after either.

The write transaction queues its statements on psycopg's pipeline, BEGIN with the first and COMMIT with the last,
so what psycopg's ``transaction()`` would do for us is checked here: answers read in order, a Python error, a
statement PostgreSQL refuses, a failed COMMIT and a cancelled task each leave nothing written and the pooled
connection idle and out of pipeline mode, ready for psycopg's next call; statements are prepared once per
connection, and a connection whose prepared statements psycopg dropped (DEALLOCATE ALL) writes at the first try.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable

import psycopg
import pytest
from npc_memory.engine import MemoryEngine
from npc_memory.store.compiled import compile_statement
from npc_memory.store.pipelined import Pipeline, pipelined_transaction
from npc_memory.store.pool import Connection
from psycopg import pq, sql

TABLE = "pipelined_tx_probe"
INSERT = compile_statement(sql.SQL(f"INSERT INTO {TABLE} VALUES (%(tag)s, %(n)s)"))
SUM = compile_statement(sql.SQL("SELECT %(a)s::int + %(b)s::int AS n, %(tag)s::text AS tag"))
COUNT = compile_statement(sql.SQL(f"SELECT count(*) AS n FROM {TABLE} WHERE tag = %(tag)s"))


async def _rows(engine: MemoryEngine, tag: str) -> int:
    async with engine.db.connection() as conn:
        cur = await conn.execute(f"SELECT count(*) AS n FROM {TABLE} WHERE tag = %s", (tag,))
        row = await cur.fetchone()
    assert row is not None
    return int(row["n"])


async def _idle(conn: Connection) -> None:
    """Out of any transaction and of pipeline mode, and psycopg's own calls work (before the pool could clean up)."""
    assert conn.info.transaction_status == pq.TransactionStatus.IDLE
    assert conn.pgconn.pipeline_status == pq.PipelineStatus.OFF
    cur = await conn.execute("SELECT 1 AS one")
    assert await cur.fetchone() == {"one": 1}


@pytest.fixture
async def table(engine: MemoryEngine) -> None:
    async with engine.db.connection() as conn:
        await conn.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (tag text NOT NULL, n int NOT NULL CHECK (n >= 0),"
                           " UNIQUE (tag, n) DEFERRABLE INITIALLY DEFERRED)")


@pytest.mark.usefixtures("table")
async def test_reads_then_writes_commit(engine: MemoryEngine) -> None:
    """Answers come back in order once sent; writes queued after them commit with the block."""
    tag = uuid.uuid4().hex
    async with engine.db.connection() as conn:
        async with pipelined_transaction(conn) as pipe:
            first = pipe.queue(SUM, {"a": 40, "b": 2, "tag": tag})
            second = pipe.queue(SUM, {"a": 1, "b": 1, "tag": None})
            before = pipe.queue(COUNT, {"tag": tag})
            with pytest.raises(psycopg.InterfaceError):  # not sent yet: it would wait for ever
                await pipe.rows(first)
            await pipe.send()
            assert await pipe.rows(second) == [{"n": 2, "tag": None}]  # read past the first: both kept
            assert await pipe.one(first) == {"n": 42, "tag": tag}
            assert await pipe.one(before) == {"n": 0}
            pipe.queue(INSERT, {"tag": tag, "n": 1})
            pipe.queue(INSERT, {"tag": tag, "n": 2})
        await _idle(conn)
    assert await _rows(engine, tag) == 2


def _python_error(pipe: Pipeline, tag: str) -> None:
    pipe.queue(INSERT, {"tag": tag, "n": 1})
    raise RuntimeError("planned")


def _refused_statement(pipe: Pipeline, tag: str) -> None:
    """The second INSERT breaks a CHECK: PostgreSQL's error surfaces at the end, after the first INSERT ran."""
    pipe.queue(INSERT, {"tag": tag, "n": 1})
    pipe.queue(INSERT, {"tag": tag, "n": -1})
    pipe.queue(INSERT, {"tag": tag, "n": 2})


def _failed_commit(pipe: Pipeline, tag: str) -> None:
    """A deferred UNIQUE: the statements succeed, COMMIT itself fails."""
    pipe.queue(INSERT, {"tag": tag, "n": 3})
    pipe.queue(INSERT, {"tag": tag, "n": 3})


@pytest.mark.usefixtures("table")
@pytest.mark.parametrize(("block", "raised"), [
    (_python_error, RuntimeError), (_refused_statement, psycopg.errors.CheckViolation),
    (_failed_commit, psycopg.errors.UniqueViolation),
])
async def test_a_failure_writes_nothing(
    engine: MemoryEngine, block: Callable[[Pipeline, str], None], raised: type[Exception]
) -> None:
    """A Python error, a refused statement, a failed COMMIT: raised as is, nothing written, the connection idle."""
    tag = uuid.uuid4().hex

    async def inside(conn: Connection) -> None:
        async with pipelined_transaction(conn) as pipe:
            block(pipe, tag)

    async with engine.db.connection() as conn:
        with pytest.raises(raised):
            await inside(conn)
        await _idle(conn)
    assert await _rows(engine, tag) == 0


@pytest.mark.usefixtures("table")
async def test_a_refused_read_raises_its_own_error(engine: MemoryEngine) -> None:
    """A read PostgreSQL refuses raises its own error (not a later statement's "aborted"); nothing is written."""
    tag = uuid.uuid4().hex

    async def inside(conn: Connection) -> None:
        async with pipelined_transaction(conn) as pipe:
            pipe.queue(INSERT, {"tag": tag, "n": 1})
            pipe.queue(compile_statement(sql.SQL("SELECT 1 / %(zero)s::int AS n")), {"zero": 0})
            after = pipe.queue(COUNT, {"tag": tag})
            await pipe.send()  # raises already if the error came back while later statements went out
            await pipe.rows(after)

    async with engine.db.connection() as conn:
        with pytest.raises(psycopg.errors.DivisionByZero):
            await inside(conn)
        await _idle(conn)
    assert await _rows(engine, tag) == 0


@pytest.mark.usefixtures("table")
async def test_a_batch_larger_than_the_socket_buffers_commits(engine: MemoryEngine) -> None:
    """Statements each larger than the socket's buffer, then a read: all of it is sent before the read waits.

    psycopg's ``AsyncPipeline.sync`` waited for ever here (the server waiting for the rest of a statement still in
    libpq's buffer); ``Pipeline.rows`` flushes first.
    """
    tag = uuid.uuid4().hex
    wide = compile_statement(sql.SQL(f"INSERT INTO {TABLE} SELECT %(tag)s, %(n)s WHERE length(%(pad)s) > 0"))
    pad = "가" * 400_000
    async with engine.db.connection() as conn:
        async with asyncio.timeout(60), pipelined_transaction(conn) as pipe:
            for n in range(5):
                pipe.queue(wide, {"tag": tag, "n": n, "pad": pad})
            counted = pipe.queue(COUNT, {"tag": tag})
            await pipe.send()
            assert await pipe.one(counted) == {"n": 5}
            for n in range(5, 10):
                pipe.queue(wide, {"tag": tag, "n": n, "pad": pad})
        await _idle(conn)
    assert await _rows(engine, tag) == 10


@pytest.mark.usefixtures("table")
async def test_a_cancelled_task_rolls_back(engine: MemoryEngine) -> None:
    """Cancelled while it waits inside the block (as a store waits for the model): nothing written."""
    tag = uuid.uuid4().hex
    inside = asyncio.Event()
    after: list[tuple[pq.TransactionStatus, pq.PipelineStatus]] = []

    async def store() -> None:
        async with engine.db.connection() as conn:
            try:
                async with pipelined_transaction(conn) as pipe:
                    pipe.queue(INSERT, {"tag": tag, "n": 1})
                    counted = pipe.queue(COUNT, {"tag": tag})
                    await pipe.send()
                    assert await pipe.one(counted) == {"n": 1}
                    inside.set()
                    await asyncio.sleep(30)
            finally:
                after.append((conn.info.transaction_status, pq.PipelineStatus(conn.pgconn.pipeline_status)))

    task = asyncio.ensure_future(store())
    await asyncio.wait_for(inside.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert after == [(pq.TransactionStatus.IDLE, pq.PipelineStatus.OFF)]
    assert await _rows(engine, tag) == 0


async def _prepared(conn: Connection, query: str) -> int:
    cur = await conn.execute("SELECT count(*) AS n FROM pg_prepared_statements WHERE statement = %s", (query,))
    row = await cur.fetchone()
    assert row is not None
    return int(row["n"])


@pytest.mark.usefixtures("table")
async def test_prepared_once_and_after_psycopg_dropped_them(engine: MemoryEngine) -> None:
    """A statement is prepared once per connection; after psycopg's DEALLOCATE ALL a write succeeds at once.

    psycopg sends DEALLOCATE ALL after a transaction of its own rolls back, and forgets what it prepared: the next
    write prepares again instead of failing on a statement the session lost.
    """
    tag = uuid.uuid4().hex
    query = SUM.query.decode()
    async with engine.db.connection() as conn:
        for _ in range(2):
            async with pipelined_transaction(conn) as pipe:
                reply = pipe.queue(SUM, {"a": 1, "b": 2, "tag": tag})
                await pipe.send()
                assert await pipe.one(reply) == {"n": 3, "tag": tag}
        assert await _prepared(conn, query) == 1
        async with pipelined_transaction(conn) as pipe:
            for _ in range(3):
                pipe.queue(SUM, {"a": 1, "b": 2, "tag": tag})
        assert await _prepared(conn, query) == 1

        async def rolled_back() -> None:
            async with conn.transaction():
                await conn.execute("SELECT 1", prepare=True)  # psycopg prepares one of its own
                raise RuntimeError("rolled back")

        with pytest.raises(RuntimeError):
            await rolled_back()
        assert await _prepared(conn, query) == 0
        async with pipelined_transaction(conn) as pipe:
            pipe.queue(INSERT, {"tag": tag, "n": 1})
            reply = pipe.queue(SUM, {"a": 1, "b": 2, "tag": tag})
            await pipe.send()
            assert await pipe.one(reply) == {"n": 3, "tag": tag}
        assert await _prepared(conn, query) == 1
        await conn.execute("DEALLOCATE ALL")
        async with pipelined_transaction(conn) as pipe:
            pipe.queue(INSERT, {"tag": tag, "n": 2})
            reply = pipe.queue(SUM, {"a": 1, "b": 2, "tag": tag})
            await pipe.send()
            assert await pipe.one(reply) == {"n": 3, "tag": tag}
        await _idle(conn)
    assert await _rows(engine, tag) == 2
