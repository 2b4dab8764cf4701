"""The connection a pool keeps for the held scopes' syncs (store/pool.py ``Database.kept_connection``).

Each test opens a pool of its own on the test database, so its counters move only with what the test does; the
pool's ``requests_num`` counts the connections it handed out.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace

import numpy as np
import psycopg
import pytest
import pytest_asyncio
from npc_memory.config.database import PoolSettings
from npc_memory.domain.model import Scope
from npc_memory.engine import MemoryEngine
from npc_memory.errors import UnavailableError
from npc_memory.search.held import ScopeCache
from npc_memory.store.pool import KEEPS_ONE_FROM, Database
from test_scope_cache import _held, _query, _seed


def handed_out(db: Database) -> int:
    """How many connections the pool has handed out so far."""
    return db.stats().get("requests_num", 0)


async def backend_pid(db: Database) -> int:
    """The server process of the connection ``kept_connection`` lends now."""
    async with db.kept_connection() as conn:
        row = await (await conn.execute("SELECT pg_backend_pid() AS pid")).fetchone()
    assert row is not None
    return int(row["pid"])


@pytest_asyncio.fixture
async def db(engine: MemoryEngine) -> AsyncIterator[Database]:
    """A pool of its own, large enough to lend a connection for good."""
    own = Database(engine.db.url, PoolSettings(min_size=1, max_size=KEEPS_ONE_FROM))
    await own.open()
    yield own
    await own.close()


async def test_a_free_kept_connection_serves_every_use_without_the_pool(db: Database) -> None:
    """The first use borrows one connection; the next ones reuse it and take nothing more from the pool."""
    before = handed_out(db)
    pids = {await backend_pid(db) for _ in range(5)}
    assert len(pids) == 1
    assert handed_out(db) == before + 1


async def test_a_use_meanwhile_takes_a_pooled_connection(db: Database) -> None:
    async with db.kept_connection() as kept:
        async with db.kept_connection() as meanwhile:
            assert meanwhile is not kept
            await meanwhile.execute("SELECT 1")
        await kept.execute("SELECT 1")


async def test_a_broken_kept_connection_fails_once_and_is_replaced(db: Database, engine: MemoryEngine) -> None:
    """Its server process gone, the use answers UnavailableError (as a broken pooled one does); the next one works."""
    pid = await backend_pid(db)
    async with engine.db.connection() as other:  # with a timeout it returns once the server process is gone
        ended = await (await other.execute("SELECT pg_terminate_backend(%s, 5000) AS ended", (pid,))).fetchone()
    assert ended == {"ended": True}
    with pytest.raises(UnavailableError):
        async with db.kept_connection() as conn:
            await conn.execute("SELECT 1")
    assert await backend_pid(db) != pid


async def test_a_failed_use_gives_the_connection_back(db: Database) -> None:
    """A statement error inside the use leaves no kept connection behind: the next use borrows again."""
    await backend_pid(db)
    before = handed_out(db)
    with pytest.raises(psycopg.errors.DivisionByZero):
        async with db.kept_connection() as conn:
            await conn.execute("SELECT 1 / 0")
    await backend_pid(db)
    assert handed_out(db) == before + 1


async def test_a_cancelled_use_is_not_lent_again_while_busy(db: Database) -> None:
    """A use cancelled while its statement runs gives the busy connection back; the next use gets a working one."""
    started = asyncio.Event()

    async def slow() -> None:
        async with db.kept_connection() as conn:
            started.set()
            await conn.execute("SELECT pg_sleep(5)")

    task = asyncio.ensure_future(slow())
    await started.wait()
    await asyncio.sleep(0.1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    async with asyncio.timeout(2):
        async with db.kept_connection() as conn:
            row = await (await conn.execute("SELECT 1 AS one")).fetchone()
    assert row == {"one": 1}


async def test_a_small_pool_lends_nothing_for_good(engine: MemoryEngine) -> None:
    small = Database(engine.db.url, PoolSettings(min_size=1, max_size=KEEPS_ONE_FROM - 1))
    await small.open()
    try:
        before = handed_out(small)
        for _ in range(3):
            await backend_pid(small)
        assert handed_out(small) == before + 3
        assert small.stats().get("pool_available") == small.stats().get("pool_size")
    finally:
        await small.close()


async def test_held_searches_sync_on_the_kept_connection(engine: MemoryEngine, db: Database, scope: Scope) -> None:
    """Searches of a held scope take no pooled connection once the kept one is borrowed."""
    await _seed(engine, scope, 60, seed=7)
    own = replace(engine, db=db, scope_cache=None)
    cache = ScopeCache(10_000)
    rng = np.random.default_rng(3)
    query = _query(own, scope, rng, text="좋아해")
    await _held(cache, own, query, ["좋아하다"])
    await _held(cache, own, query, ["좋아하다"])
    before = handed_out(db)
    for _ in range(5):
        await _held(cache, own, _query(own, scope, rng, text="좋아해"), ["좋아하다"])
    assert handed_out(db) == before
    await cache.close()
