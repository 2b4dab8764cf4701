"""The rows a context block is built from (besides the search): the scope's valid profile and event rows."""

from __future__ import annotations

from datetime import datetime

from npc_memory.domain.model import Memory, Scope
from npc_memory.store.compiled import compile_statement, read
from npc_memory.store.pool import Database
from npc_memory.store.rows import MEMORY_COLUMNS, memory_from_row
from npc_memory.store.view import own_and_shared, view_params

# Facts about the player, about this heroine, and events, valid at %(at)s, most important first; the domain
# (domain/context.py) sorts them into sections. Shared rows of other heroines only with include_shared.
_PROFILE = """
SELECT {columns} FROM {visible} m
WHERE m.valid_at <= %(at)s AND (m.invalid_at IS NULL OR m.invalid_at > %(at)s)
  AND (m.subject = 'user' OR (m.subject = 'heroine' AND m.subject_id = %(heroine_id)s) OR m.content_type = 'event')
ORDER BY m.importance DESC, m.valid_at DESC, m.id
LIMIT %(limit)s
"""
PROFILE = own_and_shared(_PROFILE, columns=MEMORY_COLUMNS)
"""The profile read, of the scope's own rows or (True) with the player's shared ones."""
# With the view they are 4.3 KB, over psycopg's 4 KB parse cache: psycopg rendered and split them on every block.
_COMPILED = {shared: compile_statement(statement) for shared, statement in PROFILE.items()}


async def profile_rows(db: Database, scope: Scope, at: datetime, include_shared: bool, limit: int) -> list[Memory]:
    """Up to ``limit`` valid rows about the player, the heroine, or events."""
    params = {"user_id": scope.user_id, "heroine_id": scope.heroine_id, "at": at, "limit": limit}
    params |= view_params(include_shared=include_shared)
    return [memory_from_row(r) for r in await read(db, _COMPILED[include_shared], params)]
