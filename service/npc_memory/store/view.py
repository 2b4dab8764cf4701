"""The rows a read sees: one timeline's view as the service knew it at a system time, written once.

A player's timeline is its own rows plus its ancestors' rows as they were at the branch points (a load
copies nothing). ``view_ctes`` reads the lineage the timeline's row holds (migration 0017) into one row of two
small arrays (timeline ids, ascending, and the system time up to which each is seen) and the newest per-timeline
change of each row; ``VISIBLE`` is the scope's rows in that view, with the changeable columns (importance, tier,
metadata, invalid_at, close_reason, superseded_by) as the view has them. Every read of memories selects from it:
``VISIBLE`` for statements over the whole scope (search, history, a scope read whole), ``PICKED`` for those that
pick a few rows (get, a listing's page, the write path's duplicate, slot and dialogue reads, a held scope's sync),
which looks each picked row's change entry up instead of building the scope's newest entries.

A player who never saved has no state row, no other timeline and no change entries: reading the live view
(no timeline, no ``known_at``), ``VISIBLE`` is then a plain scan of the scope's rows, chosen inside the
statement by a one-time filter (one index probe of player_state per statement). Otherwise the view costs two
index probes per statement and, per row, one hash probe and a binary search of the lineage, never a join per row.
"""

from __future__ import annotations

from typing import Any

from psycopg import sql

from npc_memory.domain.model import LIVE, ReadView

ROOT_TIMELINE = 1
"""Every player's first timeline."""

# view_timeline NULL means the player's live timeline (the root without a state row); known_at NULL means now.
# Which of the player's rows a read sees: the scope's own, or (a sharing read) also the player's shared rows of
# every heroine. A private row of another heroine never passes either. Two statements rather than one
# predicate with an include_shared parameter: a prepared statement's generic plan cannot fold ``heroine = X OR
# (false AND ...)`` to ``heroine = X``, so every search of a player who also talks to other heroines scanned
# their rows too (docs/decisions/shared-reads.md).
OWN_ROWS = sql.SQL("m.heroine_id = %(heroine_id)s")
SHARED_ROWS = sql.SQL("(m.heroine_id = %(heroine_id)s OR m.visibility = 'shared')")
SCOPE_ROWS = sql.SQL("(m.heroine_id = %(heroine_id)s OR (%(include_shared)s AND m.visibility = 'shared'))")
"""The same choice made by a parameter, for the PGroonga side, whose statement is written once for both."""

# The lineage is read, not walked: each timeline row holds its own (migration 0017), ascending from the root; the
# root (no row) and a timeline id the player does not have are themselves alone. ``known_at`` caps every limit. The
# arrays are made anew rather than passed on: a lineage of a few hundred loads is stored compressed, and every row's
# lookup would decompress it again (seen in EXPLAIN ANALYZE, a player 300 loads deep).
_VIEW_CTES = """
view AS MATERIALIZED (
    SELECT array_agg(a.timeline_id ORDER BY a.i) AS tls,
           array_agg(LEAST(a.upto, %(known_at)s::timestamptz) ORDER BY a.i) AS uptos
    FROM (SELECT COALESCE(%(view_timeline)s::bigint,
                          (SELECT p.timeline_id FROM player_state p WHERE p.user_id = %(user_id)s), 1) AS timeline_id) w
    LEFT JOIN timelines t ON t.user_id = %(user_id)s AND t.timeline_id = w.timeline_id
    CROSS JOIN LATERAL unnest(COALESCE(t.lineage, ARRAY[w.timeline_id]),
                              COALESCE(t.lineage_upto, ARRAY['infinity'::timestamptz]))
                       WITH ORDINALITY AS a (timeline_id, upto, i)
),
changes AS MATERIALIZED (
    SELECT DISTINCT ON (c.memory_id) c.memory_id, c.changed_at, c.importance, c.tier, c.metadata,
           c.invalid_at, c.close_reason, c.superseded_by
    FROM memory_changes c CROSS JOIN view v
    WHERE c.user_id = %(user_id)s {changes_scope} AND {change_seen}
    ORDER BY c.memory_id, c.changed_at DESC, c.seq DESC
)"""


def _seen(alias: str, at: str) -> str:
    """Whether ``alias``'s timeline is in the lineage and its time ``at`` within that timeline's limit.

    The place is found by binary search over the ascending ids (width_bucket: the last id not above the row's),
    then checked to be the row's own: a search through the array per row grew with every load the player made
    (docs/guide/game-time.md).
    """
    place = f"width_bucket({alias}.timeline_id, v.tls)"
    return f"(v.tls[{place}] = {alias}.timeline_id AND {alias}.{at} <= v.uptos[{place}])"


# A row closed in place counts only if the close was known at the view's limit on the row's timeline (the row is
# seen, so its timeline is in the lineage); a row inserted already closed (history) has no closed_at and is closed
# from its creation.
_UPTO = "v.uptos[width_bucket(m.timeline_id, v.tls)]"
_CLOSED_HERE = f"m.invalid_at IS NOT NULL AND COALESCE(m.closed_at, m.created_at) <= {_UPTO}"

_FIXED = """m.id, m.user_id, m.heroine_id, m.speaker, m.subject, m.subject_id, m.content_type, m.content,
           m.content_key, m.terms, m.meaning, m.embedding, m.embedding_model, m.slot, m.valid_at, m.created_at,
           m.timeline_id, m.visibility, m.dialogue_id, m.dialogue_position, m.speaker_name"""

# A player who never saved (no state row: nearly every player) reading the live view now sees every row of the
# root timeline with its own columns: no lineage lookup, no change entries (a change is an entry only once the
# player has saved, store/changes.py). The plain branch reads those rows straight from the table; the view's
# branches run otherwise. Each branch is gated by a condition free of the row (a one-time filter over an
# InitPlan), so PostgreSQL runs exactly one side per statement and never touches the other (EXPLAIN ANALYZE:
# "never executed"), and nothing is cached outside the statement, so every worker process sees a save at once.
# Read both ways in one run, the same rows took the plain branch about a tenth less time than the view's.
_PLAIN = """(%(view_timeline)s::bigint IS NULL AND %(known_at)s::timestamptz IS NULL
           AND NOT EXISTS (SELECT 1 FROM player_state p WHERE p.user_id = %(user_id)s))"""

# The view's two branches rather than a LEFT JOIN with the changes: rows without a change (nearly all) are kept by
# a hashed NOT IN, whose cost per row is one hash probe whatever plan the prepared statement settles on, and the
# few changed rows are fetched by key. (A LEFT JOIN let the generic plan of the prepared search, which estimates a
# handful of scope rows, pick a nested loop over the changes: 30,000 comparisons for a 400-row scope.)
_PLAIN_ROWS = """
    SELECT {fixed}, m.importance, m.tier, m.metadata, m.updated_at, m.invalid_at, m.close_reason, m.superseded_by
    FROM user_memories m
    WHERE {plain} AND m.user_id = %(user_id)s AND {scope} AND m.timeline_id = {root}"""
_UNCHANGED_ROWS = """
    SELECT {fixed}, m.importance, m.tier, m.metadata, m.updated_at,
           CASE WHEN {closed} THEN m.invalid_at END AS invalid_at,
           CASE WHEN {closed} THEN m.close_reason END AS close_reason,
           CASE WHEN {closed} THEN m.superseded_by END AS superseded_by
    FROM user_memories m CROSS JOIN view v
    WHERE NOT {plain} AND m.user_id = %(user_id)s AND {scope} AND {seen}
      AND m.id NOT IN (SELECT memory_id FROM changes)"""
_CHANGED_ROWS = """
    SELECT {fixed}, ch.importance, ch.tier, ch.metadata, ch.changed_at AS updated_at,
           ch.invalid_at, ch.close_reason, ch.superseded_by
    FROM changes ch
    JOIN user_memories m ON m.user_id = %(user_id)s AND m.id = ch.memory_id
    CROSS JOIN view v
    WHERE NOT {plain} AND {scope} AND {seen}"""

# The rows of a statement that picks a few (by key, by slot, in a short window), in one branch: each row the
# statement's own conditions on the table chose has its newest entry the view sees looked up by key (a lateral read
# per row: it is never turned into a join over the scope's entries), and shows the entry's columns if it has one,
# its own otherwise.
# The whole-scope branches above first build the scope's newest entries (O(entries) in every statement) and join
# each back to its row: a player who saved once and then played 300 days paid for the whole set and every row's
# lookup in every read of a statement, whatever it asked for (a lone dated store cost a multiple of a never-saved
# player's; docs/decisions/save-point-cost.md). A statement over the whole scope keeps
# those branches: here it would look up every row of the scope. The newest entry is the one of the largest seq: a
# memory's entries are written one after another under its scope's lock, so seq and changed_at rise together, and
# that order is the primary key's, read backwards and stopped at the first the view sees. Ordered by changed_at, the
# lookup of a table not yet analysed was planned as a scan of every entry per row: a slot set every day by a player
# who saved cost a store ten times as much after 300 days as with this order.
_LOOKED_UP_ROWS = """
    SELECT {fixed},
           CASE WHEN ch.changed_at IS NULL THEN m.importance ELSE ch.importance END AS importance,
           CASE WHEN ch.changed_at IS NULL THEN m.tier ELSE ch.tier END AS tier,
           CASE WHEN ch.changed_at IS NULL THEN m.metadata ELSE ch.metadata END AS metadata,
           CASE WHEN ch.changed_at IS NULL THEN m.updated_at ELSE ch.changed_at END AS updated_at,
           CASE WHEN ch.changed_at IS NOT NULL THEN ch.invalid_at WHEN {closed} THEN m.invalid_at END AS invalid_at,
           CASE WHEN ch.changed_at IS NOT NULL THEN ch.close_reason WHEN {closed} THEN m.close_reason END
               AS close_reason,
           CASE WHEN ch.changed_at IS NOT NULL THEN ch.superseded_by WHEN {closed} THEN m.superseded_by END
               AS superseded_by
    FROM user_memories m CROSS JOIN view v
    LEFT JOIN LATERAL (
        SELECT c.changed_at, c.importance, c.tier, c.metadata, c.invalid_at, c.close_reason, c.superseded_by
        FROM memory_changes c
        WHERE c.user_id = %(user_id)s AND c.heroine_id = m.heroine_id AND c.memory_id = m.id AND {change_seen}
        ORDER BY c.seq DESC
        LIMIT 1) ch ON true
    WHERE NOT {plain} AND m.user_id = %(user_id)s AND {scope} AND {seen}"""


def _rows(branches: str, shared: bool) -> sql.Composed:
    return sql.SQL(f"({branches}\n)").format(
        closed=sql.SQL(_CLOSED_HERE), fixed=sql.SQL(_FIXED), seen=sql.SQL(_seen("m", "created_at")),
        change_seen=sql.SQL(_seen("c", "changed_at")),
        scope=SHARED_ROWS if shared else OWN_ROWS, plain=sql.SQL(_PLAIN), root=sql.Literal(ROOT_TIMELINE))


def view_ctes(shared: bool = False) -> sql.Composed:
    """The view's CTEs; a sharing read also takes the changes of the player's other scopes."""
    return sql.SQL(_VIEW_CTES).format(
        changes_scope=sql.SQL("" if shared else "AND c.heroine_id = %(heroine_id)s"),
        change_seen=sql.SQL(_seen("c", "changed_at")))


def visible(shared: bool = False) -> sql.Composed:
    """The rows the view sees: the scope's own, or (``shared``) also the player's shared rows of other scopes."""
    return _rows(f"{_PLAIN_ROWS}\n  UNION ALL{_UNCHANGED_ROWS}\n  UNION ALL{_CHANGED_ROWS}", shared)


def visible_apart(shared: bool = False) -> tuple[sql.Composed, sql.Composed]:
    """The plain rows (a player who never saved, live) and the view's rows each looked up (``PICKED``'s), apart.

    Exactly one side has rows for a statement. Apart, a read can order and cut each: no index is read in order
    through a union, and a page looks up the entries of the rows
    it shows only.
    """
    return _rows(_PLAIN_ROWS, shared), _rows(_LOOKED_UP_ROWS, shared)


VISIBLE = visible()
"""The scope's own rows in the view: what writes and non-sharing reads see."""

PICKED = _rows(f"{_PLAIN_ROWS}\n  UNION ALL{_LOOKED_UP_ROWS}", False)
"""``VISIBLE`` for a statement that picks a few of the scope's rows by key, slot or a short window: the same rows,
each one's entry looked up once the statement's own conditions chose it (_LOOKED_UP_ROWS)."""


def with_view(body: sql.Composable, shared: bool = False) -> sql.Composed:
    """``body`` (a statement reading ``visible(shared)``) preceded by the view's CTEs."""
    return sql.Composed([sql.SQL("WITH "), view_ctes(shared), sql.SQL("\n"), body])


def own_and_shared(body: str, **parts: sql.Composable) -> dict[bool, sql.Composed]:
    """``body`` (reading ``{visible}``) with the view: of the scope's own rows, and (True) with the shared ones."""
    return {shared: with_view(sql.SQL(body).format(visible=visible(shared), **parts), shared)
            for shared in (False, True)}


def view_params(view: ReadView = LIVE, include_shared: bool = False) -> dict[str, Any]:
    """Parameters of the view's CTEs and rows: a timeline as known at a time (and the PGroonga side's sharing).

    The timeline None is the player's live one, ``known_at`` None is now; ``include_shared`` admits the player's
    shared rows of other heroines (SCOPE_ROWS).
    """
    return {"view_timeline": view.timeline_id, "known_at": view.known_at, "include_shared": include_shared}
