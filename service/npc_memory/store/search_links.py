"""The links a search follows from its top results (``hops``): a second statement, after the ranking.

The ranked rows (``top``: the request's ``limit`` best, their ids and final scores, as the scoring function
ranked them) are parameters; memories linked to them (RELATED_TO or DERIVED_FROM, either direction) are reached
in one hop, memories linked to those in two. A reached memory must pass the same validity (``as_of`` or now) and
filter as a ranked one, and appears once: never when it is already ranked, and at its fewest hops, through the
best-scored row it was reached from. The statement returns each reached row with its raw cosine; the scoring
function (domain/scoring.py ``reached``) scores them and store/search.py gives them their places.

Places: reached memories take at most ``limit // 2`` places at the end of the answer, replacing the
lowest-ranked results; the places they do not fill stay with the ranked results, so the limit holds and a
search without links answers as with hops = 0. They are ordered by hops, then by their own score.
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
# first-hop memories, a search with hops = 2 many times slower than one without). DISTINCT ON keeps one
# path per memory: through the best-scored row it was reached from.
HOP = """
SELECT DISTINCT ON (m.id) m.id, n.via AS via_memory_id, {hops}::int AS hops, n.score AS path_score
FROM {neighbours} n
JOIN {visible} m ON m.id = n.other
WHERE m.id = ANY(ARRAY(SELECT other FROM {neighbours})) AND {filter} {exclude}
ORDER BY m.id, n.score DESC, n.via
"""

LINKED = """
, top AS MATERIALIZED (
    SELECT t.id, t.s_final FROM unnest(%(top_ids)s::uuid[], %(top_scores)s::float8[]) AS t(id, s_final)
),
next1 AS MATERIALIZED ({next1}),
hop1 AS MATERIALIZED ({hop1}),
next2 AS MATERIALIZED ({next2}),
hop2 AS ({hop2})
SELECT {columns}, r.via_memory_id, r.hops, {cosine} AS cosine
FROM (SELECT * FROM hop1 UNION ALL SELECT * FROM hop2) r
JOIN {visible} m ON m.id = r.id
"""

NOT_RANKED = "AND NOT EXISTS (SELECT 1 FROM top x WHERE x.id = m.id)"
NOT_REACHED = """AND NOT EXISTS (SELECT 1 FROM top x WHERE x.id = m.id)
     AND NOT EXISTS (SELECT 1 FROM hop1 y WHERE y.id = m.id)"""


def with_links(filter_sql: sql.Composable, cosine: sql.Composable, shared: bool = False) -> sql.Composed:
    """The link statement: the rows reached from ``top_ids``; ``cosine`` is an expression over ``m``.

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
        visible=visible(shared), next1=neighbours(1, "top"), hop1=hop(1, NOT_RANKED),
        next2=neighbours(2, "hop1"), hop2=hop(2, NOT_REACHED), columns=memory_columns("m"), cosine=cosine,
    ), shared)


def link_places(limit: int, hops: int) -> int:
    """How many places of an answer reached memories may take."""
    return limit // 2 if hops else 0
