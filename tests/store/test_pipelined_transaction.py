"""store/pipelined.py against the real PostgreSQL: all or nothing, and the connection clean after either.

The write transaction queues its statements on libpq's pipeline directly, BEGIN with the first and COMMIT with the
last, so what psycopg's pipeline and transaction() did for us is checked here: answers read in order, a Python
error, a statement PostgreSQL refuses, a failed COMMIT and a cancelled task each leave nothing written and the
pooled connection idle and out of pipeline mode, ready for psycopg's next call; statements are prepared once per
connection, and one the session lost is prepared again.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable

import psycopg
import pytest
from npc_memory.engine import MemoryEngine
from npc_memory.store.compiled import compile_statement
from npc_memory.store.direct import fetch_direct
from npc_memory.store.pipelined import Pipeline, StatementsLostError, in_transaction, pipelined_transaction
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
    """Answers come back in order after a sync; writes queued after them commit with the block."""
    tag = uuid.uuid4().hex
    async with engine.db.connection() as conn:
        async with pipelined_transaction(conn) as pipe:
            first = pipe.queue(SUM, {"a": 40, "b": 2, "tag": tag})
            second = pipe.queue(SUM, {"a": 1, "b": 1, "tag": None})
            before = pipe.queue(COUNT, {"tag": tag})
            with pytest.raises(psycopg.InterfaceError):  # not sent yet: it would wait for ever
                await pipe.rows(first)
            await pipe.sync()
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
async def test_a_refused_read_fails_it_and_what_follows(engine: MemoryEngine) -> None:
    """A read PostgreSQL refuses raises its own error when its rows are asked for; the statements after it too."""
    tag = uuid.uuid4().hex
    later: list[BaseException] = []

    async def inside(conn: Connection) -> None:
        async with pipelined_transaction(conn) as pipe:
            pipe.queue(INSERT, {"tag": tag, "n": 1})
            bad = pipe.queue(compile_statement(sql.SQL("SELECT 1 / %(zero)s::int AS n")), {"zero": 0})
            after = pipe.queue(COUNT, {"tag": tag})
            await pipe.sync()
            try:
                await pipe.rows(after)
            except psycopg.Error as exc:
                later.append(exc)
            await pipe.rows(bad)

    async with engine.db.connection() as conn:
        with pytest.raises(psycopg.errors.DivisionByZero):
            await inside(conn)
        await _idle(conn)
    assert [type(e) for e in later] == [psycopg.errors.DivisionByZero]
    assert await _rows(engine, tag) == 0


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
                    await pipe.sync()
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


async def _prepared(conn: Connection) -> int:
    cur = await conn.execute("SELECT count(*) AS n FROM pg_prepared_statements WHERE name LIKE 'npc_pipe_%%'")
    row = await cur.fetchone()
    assert row is not None
    return int(row["n"])


@pytest.mark.usefixtures("table")
async def test_prepared_once_and_again_when_lost(engine: MemoryEngine) -> None:
    """A statement is prepared once per connection and parameter types; one the session lost is prepared again.

    psycopg sends DEALLOCATE ALL after a transaction of its own rolls back: the next write transaction on that
    connection fails without writing, and ``in_transaction`` runs it again, preparing every statement anew.
    """
    tag = uuid.uuid4().hex
    async with engine.db.connection() as conn:
        for _ in range(2):
            async with pipelined_transaction(conn) as pipe:
                reply = pipe.queue(SUM, {"a": 1, "b": 2, "tag": tag})
                await pipe.sync()
                assert await pipe.one(reply) == {"n": 3, "tag": tag}
        start = await _prepared(conn)
        async with pipelined_transaction(conn) as pipe:
            for _ in range(3):
                pipe.queue(SUM, {"a": 1, "b": 2, "tag": tag})
        assert await _prepared(conn) == start

        async def rolled_back() -> None:
            async with conn.transaction():
                await conn.execute("SELECT 1", prepare=True)  # psycopg prepares one of its own
                raise RuntimeError("rolled back")

        async def once() -> None:
            async with pipelined_transaction(conn) as pipe:
                pipe.queue(SUM, {"a": 1, "b": 2, "tag": tag})
                pipe.queue(INSERT, {"tag": tag, "n": 1})

        with pytest.raises(RuntimeError):
            await rolled_back()
        assert await _prepared(conn) == 0
        with pytest.raises(StatementsLostError):
            await once()
        await _idle(conn)
        assert await _rows(engine, tag) == 0

        runs: list[int] = []

        async def write(pipe: Pipeline) -> dict[str, object] | None:
            runs.append(1)
            pipe.queue(INSERT, {"tag": tag, "n": len(runs)})
            reply = pipe.queue(SUM, {"a": 1, "b": 2, "tag": tag})
            await pipe.sync()
            return await pipe.one(reply)

        assert await in_transaction(conn, write) == {"n": 3, "tag": tag}
        assert len(runs) == 1
        await conn.execute("DEALLOCATE ALL")
        assert await in_transaction(conn, write) == {"n": 3, "tag": tag}
        assert len(runs) == 3
        await _idle(conn)
    assert await _rows(engine, tag) == 2


@pytest.mark.usefixtures("table")
async def test_lost_statements_beside_fresh_and_direct_ones(engine: MemoryEngine) -> None:
    """Statements that exist after DEALLOCATE ALL are not prepared twice.

    One the failed attempt prepared before it met a lost one, and one ``fetch_direct`` prepared again meanwhile: the
    second attempt and the next direct call must find them.
    """
    tag = uuid.uuid4().hex
    k = uuid.uuid4().int % 100_000
    fresh = compile_statement(sql.SQL(f"SELECT %(tag)s::text AS tag, {k} AS k"))
    direct = compile_statement(sql.SQL(f"SELECT %(n)s::int * 2 AS n, '{tag}' AS tag"))
    runs: list[int] = []

    async def write(pipe: Pipeline) -> dict[str, object] | None:
        runs.append(1)
        seen = pipe.queue(fresh, {"tag": tag})
        pipe.queue(SUM, {"a": 1, "b": 2, "tag": tag})
        pipe.queue(INSERT, {"tag": tag, "n": len(runs)})
        await pipe.sync()
        return await pipe.one(seen)

    async with engine.db.connection() as conn:
        async with pipelined_transaction(conn) as pipe:
            pipe.queue(SUM, {"a": 1, "b": 2, "tag": tag})
        assert await fetch_direct(conn, direct, {"n": 2}) == [{"n": 4, "tag": tag}]
        await conn.execute("DEALLOCATE ALL")
        assert await fetch_direct(conn, direct, {"n": 3}) == [{"n": 6, "tag": tag}]  # prepared again
        assert await in_transaction(conn, write) == {"tag": tag, "k": k}
        assert len(runs) == 2
        assert await fetch_direct(conn, direct, {"n": 4}) == [{"n": 8, "tag": tag}]
        await _idle(conn)
    assert await _rows(engine, tag) == 1
