"""Changing stored rows without rewriting what a save point saw.

A player without a save point has rows changed in place (the close's system time in ``closed_at``). Once the
player has saved, every close, importance raise and re-evaluation is instead a new ``memory_changes`` entry on
the live timeline, holding the row's changeable columns after the change: the saved and abandoned views,
which read only their own lineage's entries (store/view.py), never change.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg import sql
from psycopg.types.json import Jsonb

from npc_memory.domain.model import Scope
from npc_memory.store.compiled import Compiled, compile_statement, execute
from npc_memory.store.pipelined import Pipeline
from npc_memory.store.pool import Connection
from npc_memory.store.view import PICKED, view_params, with_view

# Writers of a player share this lock; a save or a load takes it alone, so a save point falls between writes:
# every row written before it committed before it, and the load's new timeline is in force for every write after.
LOCK_PLAYER = "SELECT pg_advisory_xact_lock_shared(hashtextextended(%(user_id)s, 1))"
LOCK_PLAYER_ALONE = "SELECT pg_advisory_xact_lock(hashtextextended(%(user_id)s, 1))"

# The player's lock, then the scope's: writers of one scope queue behind each other, other scopes never wait.
# Every statement that changes a scope's rows (store, update, invalidate, retire) takes this first.
LOCK_SCOPE = f"""
SELECT {LOCK_PLAYER.removeprefix("SELECT ")},
       pg_advisory_xact_lock(hashtextextended(%(user_id)s || '/' || %(heroine_id)s, 0))
"""

# None: the player never saved, rows change in place.
LIVE_TIMELINE = "SELECT timeline_id FROM player_state WHERE user_id = %(user_id)s"

# statement_timestamp(), not clock_timestamp(): Citus refuses a volatile function in an UPDATE of a distributed table
# (a stable one it evaluates on the coordinator), and the statement still starts after the one taking the lock.
CLOSE_IN_PLACE = """
UPDATE user_memories
SET invalid_at = GREATEST(%(invalid_at)s, valid_at), close_reason = %(close_reason)s,
    superseded_by = %(successor)s, closed_at = statement_timestamp(), updated_at = statement_timestamp()
WHERE user_id = %(user_id)s AND heroine_id = %(heroine_id)s AND id = ANY(%(ids)s)
  AND (NOT %(only_open)s OR invalid_at IS NULL)
"""

EDIT_IN_PLACE = """
UPDATE user_memories
SET importance = GREATEST(COALESCE(%(importance)s, importance), COALESCE(%(raise_to)s, 0)),
    tier = COALESCE(%(tier)s, tier), metadata = COALESCE(%(metadata)s, metadata), updated_at = statement_timestamp()
WHERE user_id = %(user_id)s AND heroine_id = %(heroine_id)s AND id = ANY(%(ids)s)
  AND (%(raise_to)s::int IS NULL OR importance < %(raise_to)s)
"""

# One entry per row named, holding the row as the live view has it with the change applied.
RECORD_CHANGE = with_view(sql.SQL("""
INSERT INTO memory_changes (user_id, heroine_id, memory_id, timeline_id, importance, tier, metadata,
                            invalid_at, close_reason, superseded_by)
SELECT m.user_id, m.heroine_id, m.id, %(live)s,
       GREATEST(COALESCE(%(importance)s, m.importance), COALESCE(%(raise_to)s, 0)),
       COALESCE(%(tier)s, m.tier), COALESCE(%(metadata)s, m.metadata),
       CASE WHEN %(close_reason)s::text IS NULL THEN m.invalid_at ELSE GREATEST(%(invalid_at)s, m.valid_at) END,
       COALESCE(%(close_reason)s, m.close_reason),
       CASE WHEN %(close_reason)s::text IS NULL THEN m.superseded_by ELSE %(successor)s END
FROM {visible} m
WHERE m.id = ANY(%(ids)s)
  AND (%(raise_to)s::int IS NULL OR m.importance < %(raise_to)s)
  AND (NOT %(only_open)s OR m.invalid_at IS NULL)
""").format(visible=PICKED))

_NO_CHANGE: dict[str, Any] = {
    "importance": None, "raise_to": None, "tier": None, "metadata": None,
    "close_reason": None, "invalid_at": None, "successor": None, "only_open": False,
}


def close_params(
    ids: Sequence[UUID], invalid_at: datetime, reason: str, successor: UUID | None = None, only_open: bool = False
) -> dict[str, Any]:
    """A close of ``ids`` at ``invalid_at`` (business time; never before a row's valid_at)."""
    return _NO_CHANGE | {"ids": list(ids), "invalid_at": invalid_at, "close_reason": reason,
                         "successor": successor, "only_open": only_open}


def edit_params(
    ids: Sequence[UUID], *, importance: int | None = None, raise_to: int | None = None, tier: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A re-evaluation: set importance, tier or metadata, or raise importance to ``raise_to`` where lower."""
    return _NO_CHANGE | {"ids": list(ids), "importance": importance, "raise_to": raise_to, "tier": tier,
                         "metadata": Jsonb(metadata) if metadata is not None else None}


_CLOSE_IN_PLACE, _EDIT_IN_PLACE = (compile_statement(sql.SQL(q)) for q in (CLOSE_IN_PLACE, EDIT_IN_PLACE))
_RECORD_CHANGE = compile_statement(RECORD_CHANGE)


def statement(change: dict[str, Any], live: int | None) -> Compiled:
    """The statement making ``change`` (close_params or edit_params): in place, or recorded on ``live``."""
    if live is not None:
        return _RECORD_CHANGE
    return _CLOSE_IN_PLACE if change["close_reason"] is not None else _EDIT_IN_PLACE


def bind(scope: Scope, change: dict[str, Any], live: int | None) -> dict[str, Any]:
    """The parameters of ``statement(change, live)`` for one scope."""
    return change | {"user_id": scope.user_id, "heroine_id": scope.heroine_id, "live": live} | view_params()


async def live_timeline(conn: Connection, user_id: str) -> int | None:
    """The player's live timeline, or None for a player who never saved (call under the player's lock)."""
    cur = await conn.execute(LIVE_TIMELINE, {"user_id": user_id})
    row = await cur.fetchone()
    return int(row["timeline_id"]) if row else None


async def apply(conn: Connection, scope: Scope, changes: Sequence[dict[str, Any]], live: int | None) -> None:
    """Make each change in order (the caller holds the scope's lock)."""
    for change in changes:
        await execute(conn, statement(change, live), bind(scope, change, live))


def queue(pipe: Pipeline, scope: Scope, changes: Sequence[dict[str, Any]], live: int | None) -> None:
    """Queue each change in order on the write transaction's pipeline (which holds the scope's lock)."""
    for change in changes:
        pipe.queue(statement(change, live), bind(scope, change, live))
