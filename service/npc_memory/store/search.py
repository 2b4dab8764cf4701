"""Search candidates in one statement: exact cosine and BM25 over the scope, fused as a union."""

from __future__ import annotations

from collections.abc import Sequence

from psycopg import sql

from npc_memory.domain.model import Candidate, SearchQuery
from npc_memory.store.filters import MEMORY_FILTER, filter_params
from npc_memory.store.pool import Database
from npc_memory.store.rows import MEMORY_COLUMNS, memory_from_row

BM25_K1 = 1.2
BM25_B = 0.75

# A scope holds hundreds to a few thousand rows, so everything is exact over the scope: no approximate
# index whose filter could drop rows. The three candidate lists are unioned (a memory found only by its
# keywords, or only by recency and importance, is never lost) and scored in Python (domain/scoring.py).
# BM25 is Okapi with Lucene's non-negative idf, its statistics taken over the scope rows searched.
CANDIDATES = sql.SQL("""
WITH scope_rows AS MATERIALIZED (
    SELECT m.id, m.valid_at, m.importance, m.terms,
           CASE WHEN %(embedding)s::vector IS NULL THEN 0.0
                ELSE 1.0 - (m.embedding <=> %(embedding)s::vector) END AS cosine
    FROM user_memories m
    WHERE m.user_id = %(user_id)s AND m.heroine_id = %(heroine_id)s AND {filter}
),
stats AS (
    SELECT count(*)::float8 AS n, avg(cardinality(terms))::float8 AS avgdl FROM scope_rows
),
query_terms AS (
    SELECT DISTINCT term FROM unnest(%(terms)s::text[]) AS q(term)
),
hits AS (
    SELECT s.id, t.term, count(*)::float8 AS tf, cardinality(s.terms)::float8 AS dl
    FROM scope_rows s CROSS JOIN LATERAL unnest(s.terms) AS t(term)
    WHERE s.terms && %(terms)s::text[] AND t.term IN (SELECT term FROM query_terms)
    GROUP BY s.id, t.term, s.terms
),
doc_freq AS (
    SELECT term, count(*)::float8 AS df FROM hits GROUP BY term
),
bm25 AS (
    SELECT h.id,
           sum(ln(1 + (st.n - d.df + 0.5) / (d.df + 0.5))
               * h.tf / (h.tf + %(k1)s * (1 - %(b)s + %(b)s * h.dl / st.avgdl))) AS score
    FROM hits h JOIN doc_freq d USING (term) CROSS JOIN stats st
    GROUP BY h.id
),
scored AS (
    SELECT s.id, s.cosine, COALESCE(k.score, 0.0) AS bm25,
           %(w_recency)s * exp(-GREATEST(extract(epoch FROM %(now)s - s.valid_at), 0) / 86400.0 / 30.0)
             + %(w_importance)s * s.importance / 10.0 AS prior
    FROM scope_rows s LEFT JOIN bm25 k ON k.id = s.id
),
candidates AS (
    (SELECT id FROM scored WHERE %(embedding)s::vector IS NOT NULL ORDER BY cosine DESC LIMIT %(k)s)
    UNION
    (SELECT id FROM scored WHERE bm25 > 0 ORDER BY bm25 DESC LIMIT %(k)s)
    UNION
    (SELECT id FROM scored ORDER BY prior DESC LIMIT %(k)s)
)
SELECT {columns}, sc.cosine, sc.bm25
FROM candidates c
JOIN scored sc ON sc.id = c.id
JOIN user_memories m ON m.id = c.id
""").format(columns=MEMORY_COLUMNS, filter=MEMORY_FILTER)


async def search_candidates(
    db: Database, query: SearchQuery, terms: Sequence[str], per_side: int
) -> list[Candidate]:
    """The union of the best ``per_side`` dense, keyword and recency/importance matches, with raw signals."""
    at = query.as_of or query.now
    params = filter_params(query.filter, at, query.include_invalidated) | {
        "user_id": query.scope.user_id,
        "heroine_id": query.scope.heroine_id,
        "embedding": query.embedding,
        "terms": list(terms),
        "k1": BM25_K1,
        "b": BM25_B,
        "now": query.now,
        "w_recency": query.weights.recency,
        "w_importance": query.weights.importance,
        "k": per_side,
    }
    async with db.connection() as conn:
        cur = await conn.execute(CANDIDATES, params)
        rows = await cur.fetchall()
    return [Candidate(memory_from_row(r), float(r["cosine"]), float(r["bm25"])) for r in rows]
