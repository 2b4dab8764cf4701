"""Maintenance over every stored row of every player, a page at a time (re-embed, re-tokenise)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any
from uuid import UUID

from npc_memory.store.pool import Database

COUNT = "SELECT count(*) AS n FROM user_memories"


async def count_rows(db: Database) -> int:
    """How many rows a sweep will visit."""
    async with db.connection() as conn:
        cur = await conn.execute(COUNT)
        row = await cur.fetchone()
    return int(row["n"]) if row else 0


async def pages(
    db: Database, statement: str, batch: int, params: Mapping[str, Any] | None = None
) -> AsyncIterator[list[dict[str, Any]]]:
    """Keyset pages of ``statement`` in (user_id, id) order, ``batch`` rows each, until one comes back empty.

    The statement reads ``user_id`` and ``id`` and takes ``after_user``/``after_id`` (NULL for the first page)
    and ``limit``; each page is read on its own connection, so the caller may write between pages. On Citus a
    page is a scan of every shard.
    """
    after: tuple[str, UUID] | None = None
    while True:
        async with db.connection() as conn:
            cur = await conn.execute(statement, {
                **(params or {}), "after_user": after[0] if after else None, "after_id": after[1] if after else None,
                "limit": batch,
            })
            rows = await cur.fetchall()
        if not rows:
            return
        yield rows
        after = (rows[-1]["user_id"], rows[-1]["id"])
