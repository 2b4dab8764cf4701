"""The scope's latest stored dialogue turn before a time: the context of a turn stored alone (domain/dialogue.py)."""

from __future__ import annotations

from datetime import datetime

from psycopg import sql

from npc_memory.domain.dialogue import MAX_TURN_CHARS, StoredTurn
from npc_memory.domain.model import Scope, Speaker
from npc_memory.store.pool import Database
from npc_memory.store.view import VISIBLE, with_view
from npc_memory.store.writes import scope_params

# The newest valid short row said in [since, before] (a row said at the same moment was stored earlier: the
# turn before it, e.g. every turn of a session dated with the session's date); any tier but gist, since a
# dialogue stored without tier source is knowledge (domain/dialogue.py). The scope index (user_id,
# heroine_id, valid_at DESC) orders it. Closed rows are not context: an invalidated line was taken back.
PREVIOUS_TURN = with_view(sql.SQL("""
SELECT m.content, m.valid_at, m.speaker FROM {visible} m
WHERE m.tier <> 'gist' AND m.invalid_at IS NULL AND char_length(m.content) <= %(max_chars)s
  AND m.valid_at <= %(before)s AND m.valid_at >= %(since)s
ORDER BY m.valid_at DESC, m.created_at DESC
LIMIT 1
""").format(visible=VISIBLE))


async def previous_turn(db: Database, scope: Scope, before: datetime, since: datetime) -> StoredTurn | None:
    """The scope's latest valid short row (not a gist) said in ``[since, before]``, if any."""
    async with db.connection() as conn:
        cur = await conn.execute(PREVIOUS_TURN, scope_params(scope) | {
            "before": before, "since": since, "max_chars": MAX_TURN_CHARS})
        row = await cur.fetchone()
    return StoredTurn(row["content"], row["valid_at"], Speaker(row["speaker"])) if row is not None else None
