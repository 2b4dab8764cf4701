"""The rows a read sees: one timeline's view as the service knew it at a system time, written once.

A player's timeline is its own rows plus its ancestors' rows as they were at the branch points (a load
copies nothing). ``VIEW_CTES`` resolves the lineage into a few (timeline_id, upto) pairs and the newest
per-timeline change of each row; ``VISIBLE`` is the scope's rows in that view, with the changeable columns
(importance, tier, metadata, invalid_at, close_reason, superseded_by) as the view has them. Every read of
memories (search, list, get, history, the write path's duplicate and slot reads) selects from ``VISIBLE``.

A player who never saved has no state row: the lineage is the root timeline up to ``known_at`` (or forever)
and the change CTE is empty, so the view costs two index probes per statement, not a join per row.
"""

from __future__ import annotations

from typing import Any

from psycopg import sql

from npc_memory.domain.model import LIVE, ReadView

ROOT_TIMELINE = 1
"""Every player's first timeline."""

# view_timeline NULL means the player's live timeline (the root without a state row); known_at NULL means now.
VIEW_CTES = sql.SQL("""
view AS MATERIALIZED (
    WITH RECURSIVE lineage (timeline_id, upto) AS (
        SELECT COALESCE(%(view_timeline)s::bigint,
                        (SELECT p.timeline_id FROM player_state p WHERE p.user_id = %(user_id)s), 1),
               COALESCE(%(known_at)s::timestamptz, 'infinity'::timestamptz)
      UNION ALL
        SELECT t.parent_id, LEAST(l.upto, t.branched_at)
        FROM lineage l JOIN timelines t ON t.user_id = %(user_id)s AND t.timeline_id = l.timeline_id
    )
    SELECT timeline_id, upto FROM lineage
),
changes AS MATERIALIZED (
    SELECT DISTINCT ON (c.memory_id) c.memory_id, c.changed_at, c.importance, c.tier, c.metadata,
           c.invalid_at, c.close_reason, c.superseded_by
    FROM memory_changes c JOIN view v ON v.timeline_id = c.timeline_id AND c.changed_at <= v.upto
    WHERE c.user_id = %(user_id)s AND c.heroine_id = %(heroine_id)s
    ORDER BY c.memory_id, c.changed_at DESC, c.seq DESC
)""")

# A row closed in place counts only if the close was known at the view's limit on the row's timeline; a row
# inserted already closed (history) has no closed_at and is closed from its creation.
_CLOSED_HERE = "m.invalid_at IS NOT NULL AND COALESCE(m.closed_at, m.created_at) <= v.upto"

VISIBLE = sql.SQL("""(
    SELECT m.id, m.user_id, m.heroine_id, m.speaker, m.subject, m.subject_id, m.content_type, m.content,
           m.content_key, m.terms, m.embedding, m.embedding_model, m.slot, m.valid_at, m.created_at,
           m.timeline_id,
           COALESCE(ch.importance, m.importance) AS importance,
           COALESCE(ch.tier, m.tier) AS tier,
           COALESCE(ch.metadata, m.metadata) AS metadata,
           COALESCE(ch.changed_at, m.updated_at) AS updated_at,
           CASE WHEN ch.memory_id IS NOT NULL THEN ch.invalid_at WHEN {closed} THEN m.invalid_at END AS invalid_at,
           CASE WHEN ch.memory_id IS NOT NULL THEN ch.close_reason WHEN {closed} THEN m.close_reason END
               AS close_reason,
           CASE WHEN ch.memory_id IS NOT NULL THEN ch.superseded_by WHEN {closed} THEN m.superseded_by END
               AS superseded_by
    FROM user_memories m
    JOIN view v ON v.timeline_id = m.timeline_id AND m.created_at <= v.upto
    LEFT JOIN changes ch ON ch.memory_id = m.id
    WHERE m.user_id = %(user_id)s AND m.heroine_id = %(heroine_id)s
)""").format(closed=sql.SQL(_CLOSED_HERE))


def with_view(body: sql.Composable) -> sql.Composed:
    """``body`` (a statement reading ``VISIBLE``) preceded by the view's CTEs."""
    return sql.Composed([sql.SQL("WITH "), VIEW_CTES, sql.SQL("\n"), body])


def view_params(view: ReadView = LIVE) -> dict[str, Any]:
    """Parameters of VIEW_CTES: a timeline (None: the player's live one) as known at ``known_at`` (None: now)."""
    return {"view_timeline": view.timeline_id, "known_at": view.known_at}
