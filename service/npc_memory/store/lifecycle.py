"""Changing stored memories: invalidate, update in place, version a content edit, erase a player."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from npc_memory.domain.edit_rules import check_close, next_version
from npc_memory.domain.model import Memory, PreparedMemory, Scope
from npc_memory.store import changes
from npc_memory.store.link_writes import CARRY_LINKS, carry_params
from npc_memory.store.pool import Connection, Database
from npc_memory.store.reads import GET, memory_found
from npc_memory.store.writes import INSERT, insert_params, scope_params

# Every timeline of the player: its changes, rows, save points, timelines and state, then the idempotency
# records (their responses hold the erased ids). All in one transaction, under the player's lock.
FORGET = "DELETE FROM user_memories WHERE user_id = %(user_id)s"
FORGET_ALSO = (
    "DELETE FROM store_requests WHERE user_id = %(user_id)s",
    "DELETE FROM extraction_jobs WHERE user_id = %(user_id)s",  # their dialogues are the player's words
    "DELETE FROM save_points WHERE user_id = %(user_id)s",
    "DELETE FROM timelines WHERE user_id = %(user_id)s",
    "DELETE FROM player_state WHERE user_id = %(user_id)s",
    # After the rows: their delete trigger counts a reset here (migration 0013). A scope written again later
    # starts a new epoch, which no server holds, so no server keeps a row from before.
    "DELETE FROM scope_versions WHERE user_id = %(user_id)s",
)


async def _read(conn: Connection, scope: Scope, memory_id: UUID) -> Memory:
    """The memory as the live view has it (the caller holds the scope's lock, so it cannot change)."""
    # On the transaction's own connection (compiled.read takes another): the lock's holder reads what it changes.
    cur = await conn.execute(GET, scope_params(scope) | {"id": memory_id})
    return memory_found(await cur.fetchone(), memory_id)


async def _locked(conn: Connection, scope: Scope, memory_id: UUID) -> tuple[Memory, int | None]:
    """Take the scope's lock; the memory as the live view has it and the player's live timeline."""
    await conn.execute(changes.LOCK_SCOPE, scope_params(scope))
    return await _read(conn, scope, memory_id), await changes.live_timeline(conn, scope.user_id)


async def invalidate(db: Database, scope: Scope, memory_id: UUID, invalid_at: datetime) -> Memory:
    """Close a valid memory at ``invalid_at`` (business time); the row stays as history."""
    async with db.transaction() as conn:
        current, live = await _locked(conn, scope, memory_id)
        check_close(current, invalid_at)
        await changes.apply(conn, scope, [changes.close_params([memory_id], invalid_at, "invalidated")], live)
        return await _read(conn, scope, memory_id)


async def update(
    db: Database, scope: Scope, memory_id: UUID, *, importance: int | None, tier: str | None,
    metadata: dict[str, Any] | None, new_version: PreparedMemory | None,
) -> Memory:
    """Re-evaluate in place and/or version a content edit, in one transaction.

    Importance, tier and metadata change in place (updated_at moves); a content edit closes the row at the
    new version's valid_at and inserts the new version (domain/edit_rules.py decides what it carries).
    """
    async with db.transaction() as conn:
        current, live = await _locked(conn, scope, memory_id)
        if importance is not None or tier is not None or metadata is not None:
            edit = changes.edit_params([memory_id], importance=importance, tier=tier, metadata=metadata)
            await changes.apply(conn, scope, [edit], live)
            current = await _read(conn, scope, memory_id)
        new = next_version(current, new_version) if new_version is not None else None
        if new is None:
            return current
        await conn.execute(INSERT, insert_params(scope, new, None, timeline_id=live))
        close = changes.close_params([memory_id], new.valid_at, "superseded", new.id)
        await changes.apply(conn, scope, [close], live)
        await conn.execute(CARRY_LINKS, carry_params(scope, memory_id, new.id))
        return await _read(conn, scope, new.id)


async def forget_player(db: Database, user_id: str) -> int:
    """Hard-delete every row of a player, across heroines: history, idempotency records and extraction jobs."""
    async with db.transaction() as conn:
        await conn.execute(changes.LOCK_PLAYER_ALONE, {"user_id": user_id})
        cur = await conn.execute(FORGET, {"user_id": user_id})
        for statement in FORGET_ALSO:
            await conn.execute(statement, {"user_id": user_id})
        return cur.rowcount
