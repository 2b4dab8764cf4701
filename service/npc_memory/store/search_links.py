"""The link part of the search statement: after ranking, follow links from the top results (``hops``).

store/search_sql.py composes this around its ranked statement, so a search with hops is still one statement
and one round trip. The ranked rows (``top``) are the request's ``limit`` best; memories linked to them
(RELATED_TO or DERIVED_FROM, either direction) are reached in one hop, memories linked to those in two. A
reached memory must pass the same validity (``as_of`` or now) and filter as a ranked one, and appears once:
never when it is already ranked, and at its fewest hops.

Places: reached memories take at most ``limit // 2`` places at the end of the answer, replacing the
lowest-ranked results; the places they do not fill stay with the ranked results, so the limit holds and a
search without links answers as with hops = 0. They are ordered by hops, then by their own score: the
weighted formula over their recency, importance and raw cosine (clipped to [0, 1]); their keyword score is
0 (they were not matched, they were reached). Their scores are therefore not comparable with the ranked
results' calibrated ones, which is why they come after them.
"""

from __future__ import annotations

from psycopg import sql

from npc_memory.store.rows import memory_columns
from npc_memory.store.view import visible, with_view

# The neighbours one hop from the rows of {source}: the other end of each link (either way: two index lookups, the
# key and memory_links_to, rather than one OR that a generic plan may scan), with the row they were reached from.
# Materialised, and gated by the request's hops, so a search with hops = 1 looks up no second hop.
NEIGHBOURS = """
    SELECT s.id AS via, s.{score} AS score, n.other
    FROM {source} s
    CROSS JOIN LATERAL (
        SELECT l.to_id AS other FROM memory_links l WHERE l.user_id = %(user_id)s AND l.from_id = s.id
        UNION ALL
        SELECT l.from_id FROM memory_links l WHERE l.user_id = %(user_id)s AND l.to_id = s.id
    ) n
    WHERE %(hops)s >= {hops}
"""

# One hop: the neighbours visible to the request (timeline view, filter, validity), not already in {exclude},
# fetched by key (an index condition the plan cannot turn into a scan). A generic plan, estimating a handful of rows
# everywhere, had looked the second hop's links up again for every row it joined them with (4,356 lookups for 33
# first-hop memories; benchmarks.search_speed at 10k rows, hops = 2: 60.6 ms p50, 6.4 now). DISTINCT ON keeps one
# path per memory: through the best-scored row it was reached from.
HOP = """
SELECT DISTINCT ON (m.id) m.id, n.via AS via_memory_id, {hops}::int AS hops, n.score AS path_score
FROM {neighbours} n
JOIN {visible} m ON m.id = n.other
WHERE m.id = ANY(ARRAY(SELECT other FROM {neighbours})) AND {filter} {exclude}
ORDER BY m.id, n.score DESC, n.via
"""

LINKED = """
, top AS MATERIALIZED ({ranked}),
next1 AS MATERIALIZED ({next1}),
hop1 AS MATERIALIZED ({hop1}),
next2 AS MATERIALIZED ({next2}),
hop2 AS ({hop2}),
reached AS (
    SELECT {columns}, r.via_memory_id, r.hops, {cosine} AS cosine,
           {recency} AS s_recency, {importance} AS s_importance
    FROM (SELECT * FROM hop1 UNION ALL SELECT * FROM hop2) r
    JOIN {visible} m ON m.id = r.id
),
linked AS (
    SELECT s.*, row_number() OVER (ORDER BY s.hops, s.s_final DESC, s.id) AS pos
    FROM (
        SELECT r.*, LEAST(1.0::float8, GREATEST(0.0::float8, r.cosine)) AS s_relevance, 0.0::float8 AS s_keyword,
               %(w_recency)s * r.s_recency + %(w_importance)s * r.s_importance
               + %(w_relevance)s * LEAST(1.0::float8, GREATEST(0.0::float8, r.cosine)) AS s_final
        FROM reached r
    ) s
),
places AS (SELECT LEAST(count(*), %(link_places)s) AS n FROM linked)
SELECT {top_columns}, t.cosine, t.s_recency, t.s_importance, t.s_relevance, t.s_keyword, t.s_final,
       NULL::uuid AS via_memory_id, 0 AS hops, t.pos
FROM (SELECT top.*, row_number() OVER (ORDER BY top.s_final DESC, top.valid_at DESC, top.id) AS pos FROM top) t
WHERE t.pos <= %(limit)s - (SELECT n FROM places)
UNION ALL
SELECT {linked_columns}, l.cosine, l.s_recency, l.s_importance, l.s_relevance, l.s_keyword, l.s_final,
       l.via_memory_id, l.hops, l.pos
FROM linked l
WHERE l.pos <= (SELECT n FROM places)
ORDER BY hops, pos
"""

NOT_RANKED = "AND NOT EXISTS (SELECT 1 FROM top x WHERE x.id = m.id)"
NOT_REACHED = """AND NOT EXISTS (SELECT 1 FROM top x WHERE x.id = m.id)
     AND NOT EXISTS (SELECT 1 FROM hop1 y WHERE y.id = m.id)"""


def with_links(
    ranked: sql.Composable, filter_sql: sql.Composable, cosine: sql.Composable, recency: sql.Composable,
    importance: sql.Composable, shared: bool = False,
) -> sql.Composed:
    """The ranked statement wrapped with the link part; the signals are expressions over ``m``.

    ``shared``: the reached memories may be the player's shared ones too, as the ranked ones may.
    """

    def neighbours(number: int, source: str) -> sql.Composed:
        return sql.SQL(NEIGHBOURS).format(hops=sql.Literal(number), source=sql.Identifier(source),
                                          score=sql.Identifier("s_final" if source == "top" else "path_score"))

    def hop(number: int, exclude: str) -> sql.Composed:
        return sql.SQL(HOP).format(hops=sql.Literal(number), neighbours=sql.Identifier(f"next{number}"),
                                   filter=filter_sql, visible=visible(shared), exclude=sql.SQL(exclude))

    # The reached memories are read through the player's timeline view, as the ranked ones are: a link never
    # brings back a row of an abandoned timeline or one the view has closed.
    return with_view(sql.SQL(LINKED).format(
        ranked=ranked, visible=visible(shared), next1=neighbours(1, "top"), hop1=hop(1, NOT_RANKED),
        next2=neighbours(2, "hop1"), hop2=hop(2, NOT_REACHED),
        columns=memory_columns("m"), cosine=cosine, recency=recency, importance=importance,
        top_columns=memory_columns("t"), linked_columns=memory_columns("l"),
    ), shared)


def link_places(limit: int, hops: int) -> int:
    """How many places of an answer reached memories may take."""
    return limit // 2 if hops else 0
