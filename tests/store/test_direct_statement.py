"""store/direct.py against the real PostgreSQL: the rows fetch_all gives, and a connection left ready.

Also: the statement is prepared again when the session lost it, errors are raised as psycopg's, and a cancelled wait
never hands a busy connection to the next caller.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import numpy as np
import psycopg
import pytest
from npc_memory.domain.model import ContentType, NewMemory, Scope, Speaker, Subject
from npc_memory.embedding.base import normalise
from npc_memory.engine import MemoryEngine
from npc_memory.store.compiled import compile_statement, fetch_all
from npc_memory.store.direct import fetch_direct, statement_name
from npc_memory.store.scope_sync import SYNC
from psycopg import pq, sql
from psycopg.rows import dict_row

PROBE = compile_statement(sql.SQL("SELECT %(a)s::int + 1 AS next, %(word)s::text AS word, %(words)s::text[] AS words"))
SLOW = compile_statement(sql.SQL("SELECT pg_sleep(%(seconds)s) AS slept"))
FAILS = compile_statement(sql.SQL("SELECT 1 / %(zero)s::int AS never"))


async def test_the_sync_gives_the_rows_fetch_all_gives(engine: MemoryEngine, scope: Scope) -> None:
    """Every column of every row alike (vectors, ids, times, arrays), for a whole scope and for no change."""
    rng = np.random.default_rng(3)
    facts = [NewMemory(speaker=Speaker.USER, subject=Subject.USER, subject_id="player", content_type=ContentType.FACT,
                       content=f"바다를 좋아해 {i}", importance=3 + i % 5,
                       valid_at=datetime(2026, 1, 1 + i, tzinfo=UTC),
                       embedding=normalise(rng.standard_normal((1, engine.embedder.dim)))[0])
             for i in range(5)]
    await engine.store(scope, facts)
    who = {"user_id": scope.user_id, "heroine_id": scope.heroine_id}
    async with engine.db.connection() as conn:
        whole = await fetch_direct(conn, SYNC, who | {"since": -1, "epoch": -1})  # a first read: every row
        assert whole == await fetch_all(conn, SYNC, who | {"since": -1, "epoch": -1})
        assert len(whole) == 5
        head = whole[0]
        after = who | {"since": 0, "epoch": head["epoch"]}  # every row is stamped after version 0
        changed = await fetch_direct(conn, SYNC, after)
        assert changed == await fetch_all(conn, SYNC, after)
        assert [r["id"] for r in changed] == [r["id"] for r in whole]
        now = who | {"since": head["version"], "epoch": head["epoch"]}
        (unchanged,) = await fetch_direct(conn, SYNC, now)
        assert unchanged == (await fetch_all(conn, SYNC, now))[0]
        assert unchanged["id"] is None
        assert unchanged["version"] == head["version"]


async def test_parameters_go_as_text_and_a_lost_statement_is_prepared_again(engine: MemoryEngine) -> None:
    # A connection of its own, not the pool's: DEALLOCATE ALL would also drop the statements psycopg prepared on a
    # pooled connection, and the next test to borrow it would fail on them.
    async with await psycopg.AsyncConnection.connect(engine.db.url, autocommit=True, row_factory=dict_row) as conn:
        row = {"next": 42, "word": "좋아해 'quoted'", "words": ["a b", "c,d", '"e"']}
        params = {"a": 41, "word": row["word"], "words": row["words"]}
        assert await fetch_direct(conn, PROBE, params) == [row]
        await conn.execute("DEALLOCATE ALL")  # what DISCARD ALL or a pooler's reset does to a session
        assert await fetch_direct(conn, PROBE, params) == [row]
        found = await conn.execute("SELECT count(*) AS n FROM pg_prepared_statements WHERE name = %s",
                                   (statement_name(PROBE).decode(),))
        assert await found.fetchone() == {"n": 1}


async def test_a_failed_statement_raises_and_leaves_the_connection_ready(engine: MemoryEngine) -> None:
    async with engine.db.connection() as conn:
        with pytest.raises(psycopg.errors.DivisionByZero):
            await fetch_direct(conn, FAILS, {"zero": 0})
        assert conn.info.transaction_status == pq.TransactionStatus.IDLE
        assert await fetch_direct(conn, PROBE, {"a": 1, "word": "x", "words": []}) == [
            {"next": 2, "word": "x", "words": []}]


async def test_a_cancelled_wait_hands_no_busy_connection_on(engine: MemoryEngine) -> None:
    """The statement still runs when its caller is cancelled; the pool must not lend that connection meanwhile."""
    async def slow() -> None:
        async with engine.db.connection() as conn:
            await fetch_direct(conn, SLOW, {"seconds": 2})

    task = asyncio.ensure_future(slow())
    await asyncio.sleep(0.3)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for _ in range(engine.db.stats().get("pool_max", 10) + 2):  # every connection the pool lends answers at once
        async with engine.db.connection() as conn:
            started = asyncio.get_running_loop().time()
            assert await fetch_direct(conn, PROBE, {"a": 0, "word": "", "words": []}) == [
                {"next": 1, "word": "", "words": []}]
            assert asyncio.get_running_loop().time() - started < 1.0


async def test_beside_runs_once_while_the_statement_is_out(engine: MemoryEngine) -> None:
    """The caller's work runs after the statement is sent and before its answer is read, once, lost statement or not."""
    async with await psycopg.AsyncConnection.connect(engine.db.url, autocommit=True, row_factory=dict_row) as conn:
        seen: list[bool] = []

        def beside() -> None:
            seen.append(conn.pgconn.is_busy() == 1)  # sent, and its answer not read yet

        params = {"a": 1, "word": "x", "words": []}
        assert await fetch_direct(conn, PROBE, params, beside) == [{"next": 2, "word": "x", "words": []}]
        assert seen == [True]
        await conn.execute("DEALLOCATE ALL")  # the first send fails with 26000 and the statement is prepared again
        assert await fetch_direct(conn, PROBE, params, beside) == [{"next": 2, "word": "x", "words": []}]
        assert seen == [True, True]
