"""Search candidates in one statement: exact cosine and BM25 over the scope, fused as a union."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from psycopg import sql

from npc_memory.domain.model import Candidate, ScoredMemory, SearchQuery
from npc_memory.domain.scoring import RECENCY_DAYS, SECONDS_PER_DAY
from npc_memory.store.filters import MEMORY_FILTER, filter_params
from npc_memory.store.pool import Database
from npc_memory.store.ranking import ranked, ranking_params, scored_from_row
from npc_memory.store.rows import MEMORY_COLUMNS, memory_from_row

BM25_K1 = 1.2
BM25_B = 0.75

# A scope holds hundreds to a few thousand rows, so everything is exact over the scope: no approximate
# index whose filter could drop rows. Three candidate lists (best cosine, best BM25, best recency and
# importance prior) are unioned, so a memory found only by its keywords is never lost, and scored in Python
# (domain/scoring.py). BM25 is Okapi with Lucene's idf ln(1 + (N - df + 0.5) / (df + 0.5)) and no constant
# (k1 + 1) factor, exactly bm25s's "lucene" method; its statistics are taken over the scope rows searched.
#
# Speed notes (EXPLAIN ANALYZE on 2,000-row scopes): every expression is float8 (date_part, not extract,
# whose numeric result made the prior cost ~3 us a row); the scope is read once into a materialised CTE;
# the one-row statistics and the document frequencies are materialised too (inlined, a generic plan
# rescanned the scope once per matching row); BM25 looks only at rows holding a query term (tf via
# array_positions, no unnest of every document); a query without terms or without a vector runs a
# statement without that side at all.

# Stored and query vectors are unit length (embedders normalise, the API normalises caller vectors), so the
# cosine is the inner product: pgvector's <#> (negated) skips the two norms <=> computes for every row.
_COSINE = "-(m.embedding <#> %(embedding)s::vector)"

_SCOPE = """
scope_rows AS MATERIALIZED (
    SELECT m.id, {term_columns}
           {cosine} AS cosine,
           %(w_recency)s * exp(-GREATEST(%(now_epoch)s - date_part('epoch', m.valid_at), 0.0::float8)
                               / %(recency_seconds)s)
             + %(w_importance)s * m.importance * 0.1::float8 AS prior
    FROM user_memories m
    WHERE m.user_id = %(user_id)s AND m.heroine_id = %(heroine_id)s AND {filter}
)"""

_BM25 = """,
stats AS MATERIALIZED (
    SELECT count(*)::float8 AS n, avg(dl)::float8 AS avgdl FROM scope_rows
),
query_terms AS (
    SELECT DISTINCT term FROM unnest(%(terms)s::text[]) AS q(term)
),
tf AS (
    SELECT s.id, s.cosine, s.dl, q.term, cardinality(array_positions(s.terms, q.term))::float8 AS tf
    FROM scope_rows s JOIN query_terms q ON q.term = ANY(s.terms)
    WHERE s.terms && %(terms)s::text[]
),
df AS MATERIALIZED (
    SELECT term, count(*)::float8 AS df FROM tf GROUP BY term
),
bm25 AS (
    SELECT tf.id, tf.cosine,
           sum(ln(1.0::float8 + (st.n - df.df + 0.5::float8) / (df.df + 0.5::float8))
               * tf.tf / (tf.tf + %(k1)s * (1.0::float8 - %(b)s + %(b)s * tf.dl / st.avgdl))) AS score
    FROM tf JOIN df USING (term) CROSS JOIN stats st
    GROUP BY tf.id, tf.cosine
)"""

# Each branch carries the cosine (one value per id, so UNION still removes repeats): the final join then
# never goes back over the scope rows, which a generic plan (estimating one scope row) made a nested loop.
_DENSE_TOP = "(SELECT id, cosine FROM scope_rows ORDER BY cosine DESC LIMIT %(k)s) UNION "
_KEYWORD_TOP = "(SELECT id, cosine FROM bm25 ORDER BY score DESC LIMIT %(k)s) UNION "
_PRIOR_TOP = "(SELECT id, cosine FROM scope_rows ORDER BY prior DESC LIMIT %(k)s)"

_FINAL = """,
candidates AS ({dense}{keyword}{prior})
SELECT {columns}, c.cosine, {bm25_score} AS bm25
FROM candidates c
{bm25_join}
JOIN user_memories m ON m.user_id = %(user_id)s AND m.id = c.id
"""


def _statement(has_vector: bool, has_terms: bool) -> sql.Composed:
    """The statement for a query with or without a vector and with or without keyword terms."""
    scope = sql.SQL(_SCOPE).format(
        term_columns=sql.SQL("m.terms, cardinality(m.terms) AS dl," if has_terms else ""),
        cosine=sql.SQL(_COSINE if has_vector else "0.0::float8"),
        filter=MEMORY_FILTER,
    )
    final = sql.SQL(_FINAL).format(
        dense=sql.SQL(_DENSE_TOP if has_vector else ""),
        keyword=sql.SQL(_KEYWORD_TOP if has_terms else ""),
        prior=sql.SQL(_PRIOR_TOP),
        columns=MEMORY_COLUMNS,
        bm25_score=sql.SQL("COALESCE(k.score, 0.0::float8)" if has_terms else "0.0::float8"),
        bm25_join=sql.SQL("LEFT JOIN bm25 k ON k.id = c.id" if has_terms else ""),
    )
    return sql.Composed([sql.SQL("WITH"), scope, sql.SQL(_BM25 if has_terms else ""), final])


CANDIDATES = {(v, t): _statement(v, t) for v in (False, True) for t in (False, True)}
"""The four variants of the search statement, by (query has a vector, query has terms)."""


def search_statement(has_vector: bool, has_terms: bool) -> sql.Composed:
    """The search statement variant for a query."""
    return CANDIDATES[(has_vector, has_terms)]


def search_params(query: SearchQuery, terms: Sequence[str], per_side: int) -> dict[str, Any]:
    """The named parameters of the search statement."""
    at = query.as_of or query.now
    return filter_params(query.filter, at, query.include_invalidated) | {
        "user_id": query.scope.user_id,
        "heroine_id": query.scope.heroine_id,
        "embedding": query.embedding,
        "terms": list(terms),
        "k1": BM25_K1,
        "b": BM25_B,
        "now_epoch": query.now.timestamp(),
        "recency_seconds": RECENCY_DAYS * SECONDS_PER_DAY,
        "w_recency": query.weights.recency,
        "w_importance": query.weights.importance,
        "k": per_side,
    }


async def search_candidates(
    db: Database, query: SearchQuery, terms: Sequence[str], per_side: int
) -> list[Candidate]:
    """The union of the best ``per_side`` dense, keyword and recency/importance matches, with raw signals."""
    statement = search_statement(query.embedding is not None, bool(terms))
    async with db.connection() as conn:
        cur = await conn.execute(statement, search_params(query, terms, per_side), prepare=True, binary=True)
        rows = await cur.fetchall()
    return [Candidate(memory_from_row(r), float(r["cosine"]), float(r["bm25"])) for r in rows]


RANKED = {key: ranked(statement) for key, statement in CANDIDATES.items()}
"""The four variants ranked in SQL: what the service runs."""


async def search_ranked(db: Database, query: SearchQuery, terms: Sequence[str], per_side: int) -> list[ScoredMemory]:
    """The best ``query.limit`` memories with their scores, ranked in the database (one round trip)."""
    statement = RANKED[(query.embedding is not None, bool(terms))]
    params = search_params(query, terms, per_side) | ranking_params(query)
    async with db.connection() as conn:
        cur = await conn.execute(statement, params, prepare=True, binary=True)
        rows = await cur.fetchall()
    return [scored_from_row(r) for r in rows]
