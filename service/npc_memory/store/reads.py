"""Reading memories: one, a page, a slot's or subject's history, a version chain."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from psycopg import sql

from npc_memory.domain.model import LIVE, Memory, MemoryFilter, ReadView, Scope
from npc_memory.domain.paging import MAX_PAGE_BYTES, Cursor, fits_in_bytes
from npc_memory.errors import NotFoundError
from npc_memory.store.filters import MEMORY_FILTER, filter_params
from npc_memory.store.pool import Database
from npc_memory.store.rows import MEMORY_COLUMNS, memory_from_row
from npc_memory.store.view import VISIBLE, view_params, visible, with_view

GET = with_view(sql.SQL("""
SELECT {columns} FROM {visible} m WHERE m.id = %(id)s
""").format(columns=MEMORY_COLUMNS, visible=VISIBLE))

_LIST = """
SELECT {columns} FROM {visible} m
WHERE {filter}
  AND (%(after_valid_at)s::timestamptz IS NULL OR (m.valid_at, m.id) < (%(after_valid_at)s, %(after_id)s::uuid))
ORDER BY m.valid_at DESC, m.id DESC
LIMIT %(limit)s
"""
LIST = {
    shared: with_view(sql.SQL(_LIST).format(columns=MEMORY_COLUMNS, filter=MEMORY_FILTER, visible=visible(shared)),
                      shared)
    for shared in (False, True)
}
"""The listing, of the scope's own rows or (True) with the player's shared ones."""

HISTORY = with_view(sql.SQL("""
SELECT {columns} FROM {visible} m
WHERE m.subject_id = %(subject_id)s AND (%(slot)s::text IS NULL OR m.slot = %(slot)s)
ORDER BY m.valid_at, m.created_at, m.id
""").format(columns=MEMORY_COLUMNS, visible=VISIBLE))

# The versions linked through superseded_by as this view has them: a later timeline's close is not followed.
CHAIN = with_view(sql.SQL(""",
seen AS MATERIALIZED (SELECT * FROM {visible} m),
chain AS (
    WITH RECURSIVE walk (id, next_id) AS (
        SELECT id, superseded_by FROM seen WHERE id = %(id)s
      UNION
        SELECT m.id, m.superseded_by FROM walk w JOIN seen m ON m.superseded_by = w.id OR m.id = w.next_id
    )
    SELECT DISTINCT id FROM walk
)
SELECT {columns} FROM seen m JOIN chain c ON c.id = m.id
ORDER BY m.valid_at, m.created_at, m.id
""").format(columns=MEMORY_COLUMNS, visible=VISIBLE))


async def get_memory(db: Database, scope: Scope, memory_id: UUID, view: ReadView = LIVE) -> Memory:
    """One memory of the scope in the view; NotFoundError if it is not there (or belongs to another scope)."""
    params = {"user_id": scope.user_id, "heroine_id": scope.heroine_id, "id": memory_id} | view_params(view)
    async with db.connection() as conn:
        cur = await conn.execute(GET, params)
        row = await cur.fetchone()
    if row is None:
        raise NotFoundError(f"no memory {memory_id} in this scope")
    return memory_from_row(row)


async def list_memories(
    db: Database, scope: Scope, flt: MemoryFilter, include_invalidated: bool, now: datetime,
    page_size: int, after: Cursor | None, view: ReadView = LIVE, include_shared: bool = False,
    max_bytes: int = MAX_PAGE_BYTES,
) -> tuple[list[Memory], Cursor | None]:
    """One page, newest valid_at first, of at most ``max_bytes``, and the next page's cursor (None on the last)."""
    params = filter_params(flt, now, include_invalidated) | view_params(view, include_shared) | {
        "user_id": scope.user_id, "heroine_id": scope.heroine_id, "limit": page_size + 1,
        "after_valid_at": after.valid_at if after else None, "after_id": after.id if after else None,
    }
    async with db.connection() as conn:
        cur = await conn.execute(LIST[include_shared], params)
        rows = await cur.fetchall()
    memories = [memory_from_row(r) for r in rows[:page_size]]
    fitting = fits_in_bytes(memories, max_bytes)
    more = len(rows) > page_size or fitting < len(memories)
    memories = memories[:fitting]
    return memories, Cursor(memories[-1].valid_at, memories[-1].id) if more else None


async def history(
    db: Database, scope: Scope, subject_id: str, slot: str | None, view: ReadView = LIVE
) -> list[Memory]:
    """Every row about a subject (or one slot of it), open and closed, by valid_at."""
    params = {"user_id": scope.user_id, "heroine_id": scope.heroine_id, "subject_id": subject_id, "slot": slot}
    params |= view_params(view)
    async with db.connection() as conn:
        cur = await conn.execute(HISTORY, params)
        return [memory_from_row(r) for r in await cur.fetchall()]


async def chain(db: Database, scope: Scope, memory_id: UUID, view: ReadView = LIVE) -> list[Memory]:
    """The versions linked to a memory through superseded_by, both ways, by valid_at."""
    params = {"user_id": scope.user_id, "heroine_id": scope.heroine_id, "id": memory_id} | view_params(view)
    async with db.connection() as conn:
        cur = await conn.execute(CHAIN, params)
        rows = await cur.fetchall()
    if not rows:
        raise NotFoundError(f"no memory {memory_id} in this scope")
    return [memory_from_row(r) for r in rows]
