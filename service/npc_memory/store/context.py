"""The rows a context block is built from (besides the search): the scope's valid profile and event rows."""

from __future__ import annotations

from datetime import datetime

from psycopg import sql

from npc_memory.domain.model import Memory, Scope
from npc_memory.store.filters import VISIBLE_ROWS, visible_params
from npc_memory.store.pool import Database
from npc_memory.store.rows import MEMORY_COLUMNS, memory_from_row

# Facts about the player, about this heroine, and events, valid at %(at)s, most important first; the domain
# (domain/context.py) sorts them into sections. Shared rows of other heroines only with include_shared.
PROFILE = sql.SQL("""
SELECT {columns} FROM user_memories m
WHERE m.user_id = %(user_id)s AND {visible_rows}
  AND m.valid_at <= %(at)s AND (m.invalid_at IS NULL OR m.invalid_at > %(at)s)
  AND (m.subject = 'user' OR (m.subject = 'heroine' AND m.subject_id = %(heroine_id)s) OR m.content_type = 'event')
ORDER BY m.importance DESC, m.valid_at DESC, m.id
LIMIT %(limit)s
""").format(columns=MEMORY_COLUMNS, visible_rows=VISIBLE_ROWS)


async def profile_rows(db: Database, scope: Scope, at: datetime, include_shared: bool, limit: int) -> list[Memory]:
    """Up to ``limit`` valid rows about the player, the heroine, or events."""
    params = visible_params(scope, include_shared) | {"at": at, "limit": limit}
    async with db.connection() as conn:
        cur = await conn.execute(PROFILE, params)
        return [memory_from_row(r) for r in await cur.fetchall()]
