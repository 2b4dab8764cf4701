"""Reading memories: one, a page, a slot's or subject's history, a version chain."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from psycopg import sql

from npc_memory.domain.model import Memory, MemoryFilter, Scope
from npc_memory.domain.paging import Cursor
from npc_memory.errors import NotFoundError
from npc_memory.store.filters import MEMORY_FILTER, VISIBLE_ROWS, filter_params, visible_params
from npc_memory.store.pool import Database
from npc_memory.store.rows import MEMORY_COLUMNS, memory_from_row

GET = sql.SQL("""
SELECT {columns} FROM user_memories m
WHERE m.user_id = %(user_id)s AND m.heroine_id = %(heroine_id)s AND m.id = %(id)s
""").format(columns=MEMORY_COLUMNS)

LIST = sql.SQL("""
SELECT {columns} FROM user_memories m
WHERE m.user_id = %(user_id)s AND {visible_rows}
  AND {filter}
  AND (%(after_valid_at)s::timestamptz IS NULL OR (m.valid_at, m.id) < (%(after_valid_at)s, %(after_id)s::uuid))
ORDER BY m.valid_at DESC, m.id DESC
LIMIT %(limit)s
""").format(columns=MEMORY_COLUMNS, filter=MEMORY_FILTER, visible_rows=VISIBLE_ROWS)

HISTORY = sql.SQL("""
SELECT {columns} FROM user_memories m
WHERE m.user_id = %(user_id)s AND m.heroine_id = %(heroine_id)s AND m.subject_id = %(subject_id)s
  AND (%(slot)s::text IS NULL OR m.slot = %(slot)s)
ORDER BY m.valid_at, m.created_at, m.id
""").format(columns=MEMORY_COLUMNS)

CHAIN = sql.SQL("""
WITH RECURSIVE chain (id, next_id) AS (
    SELECT id, superseded_by FROM user_memories
    WHERE user_id = %(user_id)s AND heroine_id = %(heroine_id)s AND id = %(id)s
  UNION
    SELECT m.id, m.superseded_by
    FROM chain c JOIN user_memories m ON m.superseded_by = c.id OR m.id = c.next_id
    WHERE m.user_id = %(user_id)s AND m.heroine_id = %(heroine_id)s
)
SELECT {columns} FROM user_memories m JOIN (SELECT DISTINCT id FROM chain) c ON c.id = m.id
WHERE m.user_id = %(user_id)s AND m.heroine_id = %(heroine_id)s
ORDER BY m.valid_at, m.created_at, m.id
""").format(columns=MEMORY_COLUMNS)


async def get_memory(db: Database, scope: Scope, memory_id: UUID) -> Memory:
    """One memory of the scope; NotFoundError if it is not there (or belongs to another scope)."""
    async with db.connection() as conn:
        cur = await conn.execute(GET, {"user_id": scope.user_id, "heroine_id": scope.heroine_id, "id": memory_id})
        row = await cur.fetchone()
    if row is None:
        raise NotFoundError(f"no memory {memory_id} in this scope")
    return memory_from_row(row)


async def list_memories(
    db: Database, scope: Scope, flt: MemoryFilter, include_invalidated: bool, now: datetime,
    page_size: int, after: Cursor | None, include_shared: bool = False,
) -> tuple[list[Memory], Cursor | None]:
    """One page, newest valid_at first, and the cursor of the next page (None on the last)."""
    params = filter_params(flt, now, include_invalidated) | visible_params(scope, include_shared) | {
        "limit": page_size + 1,
        "after_valid_at": after.valid_at if after else None, "after_id": after.id if after else None,
    }
    async with db.connection() as conn:
        cur = await conn.execute(LIST, params)
        rows = await cur.fetchall()
    memories = [memory_from_row(r) for r in rows[:page_size]]
    more = len(rows) > page_size
    return memories, Cursor(memories[-1].valid_at, memories[-1].id) if more else None


async def history(db: Database, scope: Scope, subject_id: str, slot: str | None) -> list[Memory]:
    """Every row about a subject (or one slot of it), open and closed, by valid_at."""
    params = {"user_id": scope.user_id, "heroine_id": scope.heroine_id, "subject_id": subject_id, "slot": slot}
    async with db.connection() as conn:
        cur = await conn.execute(HISTORY, params)
        return [memory_from_row(r) for r in await cur.fetchall()]


async def chain(db: Database, scope: Scope, memory_id: UUID) -> list[Memory]:
    """The versions linked to a memory through superseded_by, both ways, by valid_at."""
    params = {"user_id": scope.user_id, "heroine_id": scope.heroine_id, "id": memory_id}
    async with db.connection() as conn:
        cur = await conn.execute(CHAIN, params)
        rows = await cur.fetchall()
    if not rows:
        raise NotFoundError(f"no memory {memory_id} in this scope")
    return [memory_from_row(r) for r in rows]
