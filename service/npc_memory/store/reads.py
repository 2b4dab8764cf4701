"""Reading memories: one, a page, a slot's or subject's history, a version chain."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg import sql

from npc_memory.domain.model import LIVE, Memory, MemoryFilter, ReadView, Scope
from npc_memory.domain.paging import MAX_PAGE_BYTES, Cursor, HistoryCursor, fits_in_bytes
from npc_memory.errors import NotFoundError
from npc_memory.store.compiled import compile_statement, read
from npc_memory.store.filters import MEMORY_FILTER, filter_params
from npc_memory.store.pool import Database
from npc_memory.store.rows import MEMORY_COLUMNS, memory_from_row
from npc_memory.store.view import PICKED, VISIBLE, view_params, visible_apart, with_view

GET = with_view(sql.SQL("""
SELECT {columns} FROM {visible} m WHERE m.id = %(id)s
""").format(columns=MEMORY_COLUMNS, visible=PICKED))

# Each side of the view (view.visible_apart) is ordered and cut to the page on its own: the plain rows of a player
# who never saved, and a saved player's rows (each one's entry looked up, view.PICKED's form), come newest first from
# the scope index (user_id, heroine_id, valid_at DESC, id DESC; migration 0015), which stops after the page. Through
# the union of the view's branches PostgreSQL sorted every row of the scope for each page, so a page cost more the
# larger the scope, and more again for a player who saved. A later
# page's cursor is a statement of its own, so it is a bound of the index scan rather than a filter of every newer row.
_LIST = """
SELECT {columns} FROM (
    (SELECT {columns} FROM {plain} m WHERE {filter} AND {after} ORDER BY m.valid_at DESC, m.id DESC LIMIT %(limit)s)
  UNION ALL
    (SELECT {columns} FROM {viewed} m WHERE {filter} AND {after} ORDER BY m.valid_at DESC, m.id DESC LIMIT %(limit)s)
) m
ORDER BY m.valid_at DESC, m.id DESC
LIMIT %(limit)s
"""
_AFTER = sql.SQL("(m.valid_at, m.id) < (%(after_valid_at)s, %(after_id)s::uuid)")


def _listing(shared: bool, paged: bool) -> sql.Composed:
    plain, viewed = visible_apart(shared)
    return with_view(sql.SQL(_LIST).format(columns=MEMORY_COLUMNS, plain=plain, viewed=viewed, filter=MEMORY_FILTER,
                                           after=_AFTER if paged else sql.SQL("true")), shared)


LIST = {(shared, paged): _listing(shared, paged) for shared in (False, True) for paged in (False, True)}
"""The listing by (shared, paged): the scope's own rows or also the player's shared ones; a first or a later page."""

# History runs oldest first; a page starts after the previous page's last (valid_at, created_at, id).
HISTORY_AFTER = sql.SQL("""(%(after_valid_at)s::timestamptz IS NULL
       OR (m.valid_at, m.created_at, m.id)
          > (%(after_valid_at)s, %(after_created_at)s::timestamptz, %(after_id)s::uuid))""")

HISTORY = with_view(sql.SQL("""
SELECT {columns} FROM {visible} m
WHERE m.subject_id = %(subject_id)s AND (%(slot)s::text IS NULL OR m.slot = %(slot)s)
  AND {after}
ORDER BY m.valid_at, m.created_at, m.id
LIMIT %(limit)s
""").format(columns=MEMORY_COLUMNS, visible=VISIBLE, after=HISTORY_AFTER))

# The versions linked through superseded_by as this view has them: a later timeline's close is not followed. The
# walk reads the scope's links once (only the two ids of each row are kept: whole rows with their vectors made the
# materialised scope ~2 KB a row), then the chain's rows are fetched by key.
CHAIN = with_view(sql.SQL(""",
seen AS MATERIALIZED (SELECT m.id, m.superseded_by FROM {visible} m),
chain AS (
    WITH RECURSIVE walk (id, next_id) AS (
        SELECT id, superseded_by FROM seen WHERE id = %(id)s
      UNION
        SELECT m.id, m.superseded_by FROM walk w JOIN seen m ON m.superseded_by = w.id OR m.id = w.next_id
    )
    SELECT DISTINCT id FROM walk
)
SELECT {columns} FROM {visible} m
WHERE m.id = ANY(ARRAY(SELECT id FROM chain)) AND {after}
ORDER BY m.valid_at, m.created_at, m.id
LIMIT %(limit)s
""").format(columns=MEMORY_COLUMNS, visible=VISIBLE, after=HISTORY_AFTER))

# With the view these are 4.0-7.3 KB: psycopg rendered each composed statement on every read, and split the
# placeholders of all but GET (over its 4 KB parse cache) every time too.
_GET, _HISTORY, _CHAIN = map(compile_statement, (GET, HISTORY, CHAIN))
_LISTING = {key: compile_statement(statement) for key, statement in LIST.items()}


async def get_memory(db: Database, scope: Scope, memory_id: UUID, view: ReadView = LIVE) -> Memory:
    """One memory of the scope in the view; NotFoundError if it is not there (or belongs to another scope)."""
    params = {"user_id": scope.user_id, "heroine_id": scope.heroine_id, "id": memory_id} | view_params(view)
    rows = await read(db, _GET, params)
    return memory_found(rows[0] if rows else None, memory_id)


def memory_found(row: dict[str, Any] | None, memory_id: UUID) -> Memory:
    """``GET``'s row as a memory; NotFoundError when the view has none (or it belongs to another scope)."""
    if row is None:
        raise NotFoundError(f"no memory {memory_id} in this scope")
    return memory_from_row(row)


def _page(rows: list[Any], page_size: int, max_bytes: int) -> tuple[list[Memory], bool]:
    """The first ``page_size`` of ``rows`` (fetched one over) that fit in ``max_bytes``, and whether more follow."""
    memories = [memory_from_row(r) for r in rows[:page_size]]
    fitting = fits_in_bytes(memories, max_bytes)
    return memories[:fitting], len(rows) > page_size or fitting < len(memories)


def _history_params(page_size: int, after: HistoryCursor | None) -> dict[str, Any]:
    return {
        "limit": page_size + 1, "after_valid_at": after.valid_at if after else None,
        "after_created_at": after.created_at if after else None, "after_id": after.id if after else None,
    }


def _history_cursor(memories: list[Memory], more: bool) -> HistoryCursor | None:
    last = memories[-1] if memories and more else None
    return HistoryCursor(last.valid_at, last.created_at, last.id) if last else None


async def list_memories(
    db: Database, scope: Scope, flt: MemoryFilter, include_invalidated: bool, now: datetime,
    page_size: int, after: Cursor | None, view: ReadView = LIVE, include_shared: bool = False,
    max_bytes: int = MAX_PAGE_BYTES,
) -> tuple[list[Memory], Cursor | None]:
    """One page, newest valid_at first, of at most ``max_bytes``, and the next page's cursor (None on the last)."""
    params = filter_params(flt, now, include_invalidated) | view_params(view, include_shared) | {
        "user_id": scope.user_id, "heroine_id": scope.heroine_id, "limit": page_size + 1,
    }
    if after is not None:
        params |= {"after_valid_at": after.valid_at, "after_id": after.id}
    memories, more = _page(await read(db, _LISTING[include_shared, after is not None], params), page_size,
                           max_bytes)
    return memories, Cursor(memories[-1].valid_at, memories[-1].id) if more else None


async def history(
    db: Database, scope: Scope, subject_id: str, slot: str | None, page_size: int, after: HistoryCursor | None,
    view: ReadView = LIVE, max_bytes: int = MAX_PAGE_BYTES,
) -> tuple[list[Memory], HistoryCursor | None]:
    """One page of the rows about a subject (or one slot of it), open and closed, by valid_at; and the next cursor."""
    params = {"user_id": scope.user_id, "heroine_id": scope.heroine_id, "subject_id": subject_id, "slot": slot}
    params |= view_params(view) | _history_params(page_size, after)
    memories, more = _page(await read(db, _HISTORY, params), page_size, max_bytes)
    return memories, _history_cursor(memories, more)


async def chain(
    db: Database, scope: Scope, memory_id: UUID, page_size: int, after: HistoryCursor | None,
    view: ReadView = LIVE, max_bytes: int = MAX_PAGE_BYTES,
) -> tuple[list[Memory], HistoryCursor | None]:
    """One page of the versions linked to a memory through superseded_by, both ways, by valid_at."""
    params = {"user_id": scope.user_id, "heroine_id": scope.heroine_id, "id": memory_id} | view_params(view)
    params |= _history_params(page_size, after)
    rows = await read(db, _CHAIN, params)
    if not rows:
        if after is None:
            raise NotFoundError(f"no memory {memory_id} in this scope")
        await get_memory(db, scope, memory_id, view)  # past the chain's end: empty, if the memory is there at all
    memories, more = _page(rows, page_size, max_bytes)
    return memories, _history_cursor(memories, more)
