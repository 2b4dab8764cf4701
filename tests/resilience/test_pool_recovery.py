"""After a database outage the pool serves stores and the health ping beside the searches' kept connection at once.

The pool retries a lost connection after 1, 2, 4 … s. When the health ping finds the database back, the pool is
grown at once; grown by one connection only, the searches' kept connection took it for good and every store (and
the ping, so health) waited out the backoff (docs/decisions/outage-writes.md).
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import psycopg
import pytest
from npc_memory.config.database import PoolSettings
from npc_memory.errors import UnavailableError
from npc_memory.store.embedded import EmbeddedPostgres
from npc_memory.store.pool import Database

OUTAGE_SECONDS = 3.5
"""Past the pool's first two retries (1 s and 3 s after each lost connection), well before its third (7 s)."""


async def _select_one(db: Database, kept: bool) -> None:
    use = db.kept_connection() if kept else db.connection()
    async with use as conn:
        await conn.execute("SELECT 1")


async def test_a_store_gets_a_connection_beside_the_kept_one_once_the_database_is_back(tmp_path: Path) -> None:
    """Stop, 3.5 s down, start; the first ping nudges the pool; the kept and a pooled connection both answer."""
    pg = await asyncio.to_thread(EmbeddedPostgres, tmp_path / "pg")
    async with await psycopg.AsyncConnection.connect(pg.url, autocommit=True) as conn:
        await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")  # the pool registers its type on connecting
    db = Database(pg.url, PoolSettings(min_size=2, max_size=10, connect_timeout=5.0))
    await db.open()
    try:
        await _select_one(db, kept=True)
        await db.ping()
        await asyncio.to_thread(pg.stop)
        with pytest.raises(UnavailableError):
            await _select_one(db, kept=True)
        for _ in range(3):  # the idle connections are found lost, then the pings find none
            with pytest.raises(UnavailableError):
                await db.ping()
        await asyncio.sleep(OUTAGE_SECONDS)
        pg = await asyncio.to_thread(EmbeddedPostgres, tmp_path / "pg")
        with contextlib.suppress(UnavailableError):  # the health watcher's ping: it finds the database back
            await db.ping()
        async with db.kept_connection() as kept:  # a search's statement holds the kept connection
            await kept.execute("SELECT 1")
            await _select_one(db, kept=False)  # a store, meanwhile
            await db.ping()  # and the health check
    finally:
        await db.close()
        await asyncio.to_thread(pg.stop)
