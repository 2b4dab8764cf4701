"""Changing stored memories: invalidate, update in place, version a content edit, erase a player."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg import sql
from psycopg.types.json import Jsonb

from npc_memory.domain.edit_rules import check_close, next_version
from npc_memory.domain.model import Memory, PreparedMemory, Scope
from npc_memory.errors import NotFoundError
from npc_memory.store.pool import Connection, Database
from npc_memory.store.rows import MEMORY_COLUMNS, memory_from_row
from npc_memory.store.writes import CLOSE, INSERT, LOCK_SCOPE, insert_params, scope_params

LOCK_ROW = sql.SQL("""
SELECT {columns} FROM user_memories m
WHERE m.user_id = %(user_id)s AND m.heroine_id = %(heroine_id)s AND m.id = %(id)s
FOR UPDATE
""").format(columns=MEMORY_COLUMNS)

INVALIDATE = sql.SQL("""
UPDATE user_memories m
SET invalid_at = %(invalid_at)s, close_reason = 'invalidated', updated_at = now()
WHERE m.user_id = %(user_id)s AND m.heroine_id = %(heroine_id)s AND m.id = %(id)s
RETURNING {columns}
""").format(columns=MEMORY_COLUMNS)

UPDATE_IN_PLACE = sql.SQL("""
UPDATE user_memories m
SET importance = COALESCE(%(importance)s, importance),
    tier = COALESCE(%(tier)s, tier),
    metadata = COALESCE(%(metadata)s, metadata),
    updated_at = now()
WHERE m.user_id = %(user_id)s AND m.heroine_id = %(heroine_id)s AND m.id = %(id)s
RETURNING {columns}
""").format(columns=MEMORY_COLUMNS)

# Rows first, then the idempotency records (their responses hold the erased ids). Both in one transaction.
FORGET = "DELETE FROM user_memories WHERE user_id = %(user_id)s"
FORGET_REQUESTS = "DELETE FROM store_requests WHERE user_id = %(user_id)s"
FORGET_JOBS = "DELETE FROM extraction_jobs WHERE user_id = %(user_id)s"


async def _locked(conn: Connection, scope: Scope, memory_id: UUID) -> Memory:
    await conn.execute(LOCK_SCOPE, scope_params(scope))
    cur = await conn.execute(LOCK_ROW, scope_params(scope) | {"id": memory_id})
    row = await cur.fetchone()
    if row is None:
        raise NotFoundError(f"no memory {memory_id} in this scope")
    return memory_from_row(row)


async def invalidate(db: Database, scope: Scope, memory_id: UUID, invalid_at: datetime) -> Memory:
    """Close a valid memory at ``invalid_at`` (business time); the row stays as history."""
    async with db.transaction() as conn:
        check_close(await _locked(conn, scope, memory_id), invalid_at)
        cur = await conn.execute(INVALIDATE, scope_params(scope) | {"id": memory_id, "invalid_at": invalid_at})
        row = await cur.fetchone()
    assert row is not None  # the row is locked by this transaction
    return memory_from_row(row)


async def update(
    db: Database, scope: Scope, memory_id: UUID, *, importance: int | None, tier: str | None,
    metadata: dict[str, Any] | None, new_version: PreparedMemory | None,
) -> Memory:
    """Re-evaluate in place and/or version a content edit, in one transaction.

    Importance, tier and metadata change in place (updated_at moves); a content edit closes the row at the
    new version's valid_at and inserts the new version (domain/edit_rules.py decides what it carries).
    """
    async with db.transaction() as conn:
        current = await _locked(conn, scope, memory_id)
        if importance is not None or tier is not None or metadata is not None:
            cur = await conn.execute(UPDATE_IN_PLACE, scope_params(scope) | {
                "id": memory_id, "importance": importance, "tier": tier,
                "metadata": Jsonb(metadata) if metadata is not None else None,
            })
            row = await cur.fetchone()
            assert row is not None  # the row is locked by this transaction
            current = memory_from_row(row)
        new = next_version(current, new_version) if new_version is not None else None
        if new is None:
            return current
        await conn.execute(INSERT, insert_params(scope, new, None))
        await conn.execute(CLOSE, scope_params(scope) | {
            "id": memory_id, "invalid_at": new.valid_at, "successor": new.id,
        })
        cur = await conn.execute(LOCK_ROW, scope_params(scope) | {"id": new.id})
        row = await cur.fetchone()
    assert row is not None  # inserted by this transaction
    return memory_from_row(row)


async def forget_player(db: Database, user_id: str) -> int:
    """Hard-delete every row of a player, across heroines: history, idempotency records and extraction jobs."""
    async with db.transaction() as conn:
        cur = await conn.execute(FORGET, {"user_id": user_id})
        await conn.execute(FORGET_REQUESTS, {"user_id": user_id})
        await conn.execute(FORGET_JOBS, {"user_id": user_id})  # their dialogues are the player's words
        return cur.rowcount
