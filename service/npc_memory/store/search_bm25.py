"""The BM25 keyword side, computed in SQL over the scope's morpheme arrays (works on any PostgreSQL).

Okapi BM25 with Lucene's idf ``ln(1 + (N - df + 0.5) / (df + 0.5))`` and no constant ``(k1 + 1)`` factor, exactly
bm25s's "lucene" method; N, df and the average length are taken over the scope rows searched (after filters).

A query of up to ``UNROLLED_TERMS`` distinct terms runs a statement written for its term count: each term is its
own parameter, its df one more ``count(*) FILTER`` in the single statistics pass, and every matching row's score
one expression (no per-term rows, join or grouping). Common words made that per-term work the cost: with two
terms in 80% of a 2,000-row scope, the generic form built, joined and grouped ~2,900 term rows. Longer queries
run the generic form.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

from psycopg import sql

from npc_memory.store.keyword import KeywordSide

BM25_K1 = 1.2
BM25_B = 0.75
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

# Each term's idf is computed once, from the one statistics row, rather than again for every matching row.
UNROLLED_CTES = """,
counts AS MATERIALIZED (
    SELECT count(*)::float8 AS n, avg(dl)::float8 AS avgdl, {dfs} FROM scope_rows
),
stats AS MATERIALIZED (
    SELECT c.avgdl, {idfs} FROM counts c
),
keyword AS (
    SELECT t.id, t.cosine, {score} AS score
    FROM (SELECT s.id, s.cosine, s.dl, {tfs} FROM scope_rows s WHERE s.terms && %(terms)s::text[]) t
    CROSS JOIN stats st
)"""
DF = "count(*) FILTER (WHERE %({t})s = ANY(terms))::float8 AS df{i}"
TF = "cardinality(array_positions(s.terms, %({t})s))::float8 AS tf{i}"
# A term a row lacks has tf 0 and adds 0, as in the generic form's sum over the terms it holds.
IDF = "ln(1.0::float8 + (c.n - c.df{i} + 0.5::float8) / (c.df{i} + 0.5::float8)) AS idf{i}"
TERM_SCORE = "st.idf{i} * t.tf{i} / (t.tf{i} + %(k1)s * (1.0::float8 - %(b)s + %(b)s * t.dl / st.avgdl))"


def distinct_terms(terms: Sequence[str]) -> list[str]:
    """The query's terms, each once, in order."""
    return list(dict.fromkeys(terms))


def _unrolled(n: int) -> sql.Composed:
    names = [(i, f"t{i}") for i in range(n)]
    return sql.SQL(UNROLLED_CTES).format(
        dfs=sql.SQL(", ").join(sql.SQL(DF.format(t=t, i=i)) for i, t in names),
        idfs=sql.SQL(", ").join(sql.SQL(IDF.format(i=i)) for i, _ in names),
        tfs=sql.SQL(", ").join(sql.SQL(TF.format(t=t, i=i)) for i, t in names),
        score=sql.SQL(" + ").join(sql.SQL(TERM_SCORE.format(i=i)) for i, _ in names),
    )


def bm25_params(terms: Sequence[str]) -> dict[str, Any]:
    """The query's morphemes (the whole list, and each distinct one by position) and the BM25 constants."""
    distinct = distinct_terms(terms)
    return {"terms": list(terms), "k1": BM25_K1, "b": BM25_B} | {f"t{i}": t for i, t in enumerate(distinct)}


SCOPE_COLUMNS = sql.SQL("m.terms, cardinality(m.terms) AS dl,")

BM25 = KeywordSide(SCOPE_COLUMNS, GENERIC_CTES, bm25_params)
"""BM25 over the morphemes of the scope rows, any number of terms."""


@cache
def bm25_side(term_count: int) -> KeywordSide:
    """The BM25 side for a query of ``term_count`` distinct terms (the generic one past ``UNROLLED_TERMS``)."""
    if term_count < 1 or term_count > UNROLLED_TERMS:
        return BM25
    return KeywordSide(SCOPE_COLUMNS, _unrolled(term_count), bm25_params)
