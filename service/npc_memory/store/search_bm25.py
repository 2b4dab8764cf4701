"""The BM25 keyword side, computed in SQL over the scope's morpheme arrays (works on any PostgreSQL).

Okapi BM25 with Lucene's idf ``ln(1 + (N - df + 0.5) / (df + 0.5))`` and no constant ``(k1 + 1)`` factor, exactly
bm25s's "lucene" method; N, df and the average length are taken over the scope rows searched (after filters).

A query of up to ``UNROLLED_TERMS`` distinct terms runs a statement written for its term count: each term is its
own parameter, its tf a column of the scope rows, its df one more ``count(*) FILTER`` in the single statistics
pass, and every row's score one expression (no per-term rows, join or grouping). Common words made per-term
work the cost: with two terms in 80% of a 2,000-row scope, the generic form built, joined and grouped ~2,900
term rows. Longer queries run the generic form.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

from psycopg import sql

from npc_memory.domain.score_constants import BM25_B, BM25_K1
from npc_memory.store.keyword import KeywordSide

UNROLLED_TERMS = 8
"""Queries with at most this many distinct terms run the statement written for their term count."""

# The one-row statistics and the document frequencies are materialised (inlined, a generic plan rescanned
# the scope once per matching row). Only rows holding a query term are looked at, tf counted with
# array_positions rather than unnesting every document.
GENERIC_CTES = sql.SQL(""",
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
keyword AS (
    SELECT tf.id, tf.cosine,
           sum(ln(1.0::float8 + (st.n - df.df + 0.5::float8) / (df.df + 0.5::float8))
               * tf.tf / (tf.tf + %(k1)s * (1.0::float8 - %(b)s + %(b)s * tf.dl / st.avgdl))) AS score
    FROM tf JOIN df USING (term) CROSS JOIN stats st
    GROUP BY tf.id, tf.cosine
)""")

# A query's term frequencies are counted once per scope row while the scope is read (small float8 columns, so the
# statistics pass is a count over numbers and the terms arrays are not carried in the materialised scope); a
# ``= ANY`` test first (it stops at the first match and allocates nothing) spares a row without the term the
# array_positions count (so ordinary queries of rare words cost no more than before the count was added). Each
# term's idf and the length normalisation's two constants are computed once, from the one statistics row; every
# scope row then gets its score (0 for a row holding no query term), so the dense, keyword and prior lists all
# read one CTE that carries both the cosine and the score, and the candidates never go back to the keyword rows
# for their scores. tf / (tf + k1 (1 - b + b dl / avgdl)) is written tf / (tf + c1 + c2 dl), the same number.
UNROLLED_CTES = """,
counts AS MATERIALIZED (
    SELECT count(*)::float8 AS n, avg(dl)::float8 AS avgdl, {dfs} FROM scope_rows
),
stats AS MATERIALIZED (
    SELECT %(k1)s * (1.0::float8 - %(b)s) AS c1, %(k1)s * %(b)s / NULLIF(c.avgdl, 0.0::float8) AS c2, {idfs}
    FROM counts c
),
keyword AS MATERIALIZED (
    SELECT t.id, t.valid_at, t.cosine, t.prior,
           CASE WHEN {matches} THEN {score} ELSE 0.0::float8 END AS score
    FROM (SELECT s.*, st.*, st.c1 + st.c2 * s.dl AS norm FROM scope_rows s CROSS JOIN stats st) t
)"""
DF = "count(*) FILTER (WHERE tf{i} > 0.0::float8)::float8 AS df{i}"
TF = ("CASE WHEN %({t})s = ANY(m.terms) THEN cardinality(array_positions(m.terms, %({t})s))::float8 "
      "ELSE 0.0::float8 END AS tf{i},")
# A term a row lacks has tf 0 and adds 0, as in the generic form's sum over the terms it holds.
IDF = "ln(1.0::float8 + (c.n - c.df{i} + 0.5::float8) / (c.df{i} + 0.5::float8)) AS idf{i}"
TERM_SCORE = "t.idf{i} * t.tf{i} / (t.tf{i} + t.norm)"
MATCHES = "t.tf{i} > 0.0::float8"
DL = "cardinality(m.terms)::float8 AS dl,"


def distinct_terms(terms: Sequence[str]) -> list[str]:
    """The query's terms, each once, in order."""
    return list(dict.fromkeys(terms))


def _unrolled(n: int) -> sql.Composed:
    names = [(i, f"t{i}") for i in range(n)]
    return sql.SQL(UNROLLED_CTES).format(
        dfs=sql.SQL(", ").join(sql.SQL(DF.format(i=i)) for i, _ in names),
        idfs=sql.SQL(", ").join(sql.SQL(IDF.format(i=i)) for i, _ in names),
        matches=sql.SQL(" OR ").join(sql.SQL(MATCHES.format(i=i)) for i, _ in names),
        score=sql.SQL(" + ").join(sql.SQL(TERM_SCORE.format(i=i)) for i, _ in names),
    )


def _unrolled_columns(n: int) -> sql.Composed:
    return sql.Composed([sql.SQL(DL), *(sql.SQL(TF.format(t=f"t{i}", i=i)) for i in range(n))])


def bm25_params(terms: Sequence[str]) -> dict[str, Any]:
    """The query's morphemes (the whole list, and each distinct one by position) and the BM25 constants."""
    distinct = distinct_terms(terms)
    constants = {"k1": BM25_K1, "b": BM25_B}
    return {"terms": list(terms), **constants} | {f"t{i}": t for i, t in enumerate(distinct)}


SCOPE_COLUMNS = sql.SQL("m.terms, cardinality(m.terms) AS dl,")

BM25 = KeywordSide(SCOPE_COLUMNS, GENERIC_CTES, bm25_params)
"""BM25 over the morphemes of the scope rows, any number of terms."""


@cache
def bm25_side(term_count: int) -> KeywordSide:
    """The BM25 side for a query of ``term_count`` distinct terms (the generic one past ``UNROLLED_TERMS``)."""
    if term_count < 1 or term_count > UNROLLED_TERMS:
        return BM25
    return KeywordSide(_unrolled_columns(term_count), _unrolled(term_count), bm25_params, every_row=True)
