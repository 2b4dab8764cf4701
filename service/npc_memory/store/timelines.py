"""Save points and timelines: a save marks the player's timeline at a system time; a load branches from it.

Neither copies a row. A save records (timeline, clock time) under the player's exclusive lock, so it falls
between the player's writes. A load makes a new timeline whose parent is the save's timeline as it was at the
save (store/view.py reads the lineage) and makes it the player's live timeline.
"""

from __future__ import annotations

from npc_memory.domain.model import SavePoint, Timeline
from npc_memory.errors import FailedPreconditionError, NotFoundError
from npc_memory.store.changes import LOCK_PLAYER_ALONE, live_timeline
from npc_memory.store.pool import Connection, Database
from npc_memory.store.view import ROOT_TIMELINE

ENSURE_STATE = """
INSERT INTO player_state (user_id, timeline_id) VALUES (%(user_id)s, %(root)s)
ON CONFLICT (user_id) DO NOTHING
"""

SAVE = """
INSERT INTO save_points (user_id, save_id, timeline_id)
SELECT %(user_id)s, %(save_id)s, p.timeline_id FROM player_state p WHERE p.user_id = %(user_id)s
ON CONFLICT (user_id, save_id) DO UPDATE SET timeline_id = excluded.timeline_id, saved_at = excluded.saved_at
RETURNING save_id, timeline_id, saved_at
"""

FIND_SAVE = """
SELECT save_id, timeline_id, saved_at FROM save_points WHERE user_id = %(user_id)s AND save_id = %(save_id)s
"""

# The new timeline's lineage is its parent's (the root's is itself alone), each seen up to the branch point, then
# itself (migration 0017). Its id is one more than the player's largest, so the lineage stays ascending.
BRANCH = """
INSERT INTO timelines (user_id, timeline_id, parent_id, branched_at, save_id, lineage, lineage_upto)
SELECT %(user_id)s, n.timeline_id, %(parent)s, %(branched_at)s, %(save_id)s,
       COALESCE(p.lineage, ARRAY[%(parent)s::bigint]) || n.timeline_id,
       ARRAY(SELECT LEAST(a.upto, %(branched_at)s::timestamptz)
             FROM unnest(COALESCE(p.lineage_upto, ARRAY['infinity'::timestamptz])) WITH ORDINALITY AS a (upto, i)
             ORDER BY a.i) || 'infinity'::timestamptz
FROM (SELECT COALESCE(max(t.timeline_id), %(root)s) + 1 AS timeline_id
      FROM timelines t WHERE t.user_id = %(user_id)s) n
LEFT JOIN timelines p ON p.user_id = %(user_id)s AND p.timeline_id = %(parent)s
RETURNING timeline_id
"""

SET_LIVE = """
UPDATE player_state SET timeline_id = %(timeline_id)s, updated_at = statement_timestamp() WHERE user_id = %(user_id)s
"""

HAS_TIMELINE = "SELECT 1 FROM timelines WHERE user_id = %(user_id)s AND timeline_id = %(timeline_id)s"

SAVES = "SELECT save_id, timeline_id, saved_at FROM save_points WHERE user_id = %(user_id)s ORDER BY save_id"

TIMELINES = """
SELECT timeline_id, parent_id, branched_at, save_id, created_at FROM timelines
WHERE user_id = %(user_id)s ORDER BY timeline_id
"""

# The timeline and every timeline branched from it, however deep.
SUBTREE = """
WITH RECURSIVE sub (timeline_id) AS (
    SELECT %(timeline_id)s::bigint
  UNION
    SELECT t.timeline_id FROM sub s JOIN timelines t ON t.user_id = %(user_id)s AND t.parent_id = s.timeline_id
)
SELECT array_agg(timeline_id) AS ids FROM sub
"""

# Changes and rows of the dropped timelines, then the saves on them, then the timelines. Rows of a timeline
# that stays never point at a dropped row: a branch's rows are written after its parent stopped changing.
DROP = (
    "DELETE FROM memory_changes WHERE user_id = %(user_id)s AND timeline_id = ANY(%(ids)s)",
    "DELETE FROM user_memories WHERE user_id = %(user_id)s AND timeline_id = ANY(%(ids)s)",
    "DELETE FROM save_points WHERE user_id = %(user_id)s AND timeline_id = ANY(%(ids)s)",
    "DELETE FROM timelines WHERE user_id = %(user_id)s AND timeline_id = ANY(%(ids)s)",
)


async def _lock(conn: Connection, user_id: str) -> int:
    """Take the player's lock alone; the live timeline (the root for a player who never saved)."""
    await conn.execute(LOCK_PLAYER_ALONE, {"user_id": user_id})
    live = await live_timeline(conn, user_id)
    return ROOT_TIMELINE if live is None else live


async def create_save_point(db: Database, user_id: str, save_id: str) -> SavePoint:
    """Mark every heroine of the player at once; an existing slot of the same name is overwritten."""
    async with db.transaction() as conn:
        await _lock(conn, user_id)
        await conn.execute(ENSURE_STATE, {"user_id": user_id, "root": ROOT_TIMELINE})
        cur = await conn.execute(SAVE, {"user_id": user_id, "save_id": save_id})
        row = await cur.fetchone()
    assert row is not None  # the state row exists: inserted above or before
    return SavePoint(row["save_id"], int(row["timeline_id"]), row["saved_at"])


async def load_save_point(db: Database, user_id: str, save_id: str) -> Timeline:
    """Branch a new live timeline from the save point; NotFoundError for an unknown save."""
    async with db.transaction() as conn:
        await _lock(conn, user_id)
        cur = await conn.execute(FIND_SAVE, {"user_id": user_id, "save_id": save_id})
        save = await cur.fetchone()
        if save is None:
            raise NotFoundError(f"no save point {save_id!r} for this player")
        cur = await conn.execute(BRANCH, {
            "user_id": user_id, "root": ROOT_TIMELINE, "parent": save["timeline_id"],
            "branched_at": save["saved_at"], "save_id": save_id,
        })
        row = await cur.fetchone()
        assert row is not None  # INSERT ... SELECT of an aggregate yields one row
        timeline_id = int(row["timeline_id"])
        await conn.execute(SET_LIVE, {"user_id": user_id, "timeline_id": timeline_id})
        cur = await conn.execute("SELECT clock_timestamp() AS at")
        at = await cur.fetchone()
    assert at is not None
    return Timeline(timeline_id, int(save["timeline_id"]), save["saved_at"], save_id, at["at"], live=True)


async def list_save_points(db: Database, user_id: str) -> tuple[list[SavePoint], list[Timeline], int]:
    """The player's save points, timelines (the root included) and live timeline."""
    async with db.connection() as conn:
        state = await live_timeline(conn, user_id)
        live = ROOT_TIMELINE if state is None else state
        cur = await conn.execute(SAVES, {"user_id": user_id})
        saves = [SavePoint(r["save_id"], int(r["timeline_id"]), r["saved_at"]) for r in await cur.fetchall()]
        cur = await conn.execute(TIMELINES, {"user_id": user_id})
        timelines = [
            Timeline(int(r["timeline_id"]), int(r["parent_id"]), r["branched_at"], r["save_id"], r["created_at"],
                     live=int(r["timeline_id"]) == live)
            for r in await cur.fetchall()
        ]
    root = Timeline(ROOT_TIMELINE, None, None, "", None, live=live == ROOT_TIMELINE)
    return saves, [root, *timelines], live


async def timeline_exists(db: Database, user_id: str, timeline_id: int) -> bool:
    """Whether the player has this timeline (the root always exists)."""
    async with db.connection() as conn:
        return await _exists(conn, user_id, timeline_id)


async def drop_timeline(db: Database, user_id: str, timeline_id: int) -> int:
    """Erase an abandoned timeline and the timelines branched from it; return the rows deleted.

    FailedPreconditionError if the live timeline is it or descends from it (its rows are still seen).
    """
    async with db.transaction() as conn:
        live = await _lock(conn, user_id)
        if not await _exists(conn, user_id, timeline_id):
            raise NotFoundError(f"no timeline {timeline_id} for this player")
        cur = await conn.execute(SUBTREE, {"user_id": user_id, "timeline_id": timeline_id})
        row = await cur.fetchone()
        ids = list(row["ids"]) if row else [timeline_id]
        if live in ids:
            raise FailedPreconditionError(
                f"timeline {timeline_id} is the live timeline or one of its ancestors; load another save first"
            )
        deleted = 0
        for statement in DROP:
            cur = await conn.execute(statement, {"user_id": user_id, "ids": ids})
            if statement.startswith("DELETE FROM user_memories"):
                deleted = cur.rowcount
    return deleted


async def _exists(conn: Connection, user_id: str, timeline_id: int) -> bool:
    if timeline_id == ROOT_TIMELINE:
        return True
    cur = await conn.execute(HAS_TIMELINE, {"user_id": user_id, "timeline_id": timeline_id})
    return await cur.fetchone() is not None

