"""Who has memories: a player's heroines and the players written most recently (the inspector's lists)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from npc_memory.store.pool import Database

HEROINES = """
SELECT heroine_id, count(*) AS memories, count(*) FILTER (WHERE invalid_at IS NULL) AS valid,
       max(created_at) AS last_written
FROM user_memories
WHERE user_id = %(user_id)s
GROUP BY heroine_id
ORDER BY heroine_id
"""

# Every player's newest row: a scan of the table, for a person's page, never on a game's path.
RECENT_PLAYERS = """
SELECT user_id, count(DISTINCT heroine_id) AS heroines, count(*) AS memories, max(created_at) AS last_written
FROM user_memories
GROUP BY user_id
ORDER BY last_written DESC, user_id
LIMIT %(limit)s
"""


@dataclass(frozen=True)
class Tally:
    """How many memories one heroine (or one player) has, how many still valid, and when one was last written."""

    name: str
    memories: int
    valid: int
    last_written: datetime


@dataclass(frozen=True)
class PlayerTally:
    """A player: with how many heroines, how many memories, and when one was last written."""

    user_id: str
    heroines: int
    memories: int
    last_written: datetime


async def heroines_of(db: Database, user_id: str) -> list[Tally]:
    """The heroines the player has memories with (rows of every timeline, closed ones included)."""
    async with db.connection() as conn:
        cur = await conn.execute(HEROINES, {"user_id": user_id})
        rows = await cur.fetchall()
    return [Tally(r["heroine_id"], int(r["memories"]), int(r["valid"]), r["last_written"]) for r in rows]


async def recent_players(db: Database, limit: int) -> list[PlayerTally]:
    """The ``limit`` players written to most recently."""
    async with db.connection() as conn:
        cur = await conn.execute(RECENT_PLAYERS, {"limit": limit})
        rows = await cur.fetchall()
    return [PlayerTally(r["user_id"], int(r["heroines"]), int(r["memories"]), r["last_written"]) for r in rows]
