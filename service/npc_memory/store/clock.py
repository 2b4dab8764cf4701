"""What a search's clock hides: the scope's current memories that became true after the time it asked about."""

from __future__ import annotations

from datetime import datetime

from psycopg import sql

from npc_memory.domain.model import ReadView, Scope
from npc_memory.store.pool import Database
from npc_memory.store.view import VISIBLE, view_params, with_view

HIDDEN_BY_CLOCK = with_view(sql.SQL(
    "SELECT count(*) AS hidden FROM {visible} m WHERE m.valid_at > %(at)s AND m.invalid_at IS NULL"
).format(visible=VISIBLE))


async def count_hidden_by_clock(db: Database, scope: Scope, at: datetime, view: ReadView) -> int:
    """How many of the scope's current memories (in ``view``) are valid only from after ``at``."""
    async with db.connection() as conn:
        cur = await conn.execute(HIDDEN_BY_CLOCK, {"user_id": scope.user_id, "heroine_id": scope.heroine_id, "at": at}
                                 | view_params(view))
        row = await cur.fetchone()
    return int(row["hidden"]) if row else 0
