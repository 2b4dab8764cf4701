"""The BM25 keyword side, computed in SQL over the scope's morpheme arrays (works on any PostgreSQL).

Okapi BM25 with Lucene's idf ``ln(1 + (N - df + 0.5) / (df + 0.5))`` and no constant ``(k1 + 1)`` factor, exactly
bm25s's "lucene" method; N, df and the average length are taken over the scope rows searched (after filters).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from psycopg import sql

from npc_memory.store.keyword import KeywordSide

BM25_K1 = 1.2
BM25_B = 0.75

# The one-row statistics and the document frequencies are materialised (inlined, a generic plan rescanned
# the scope once per matching row). Only rows holding a query term are looked at, tf counted with
# array_positions rather than unnesting every document.
CTES = sql.SQL(""",
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


def bm25_params(terms: Sequence[str]) -> dict[str, Any]:
    """The query's morphemes and the BM25 constants."""
    return {"terms": list(terms), "k1": BM25_K1, "b": BM25_B}


BM25 = KeywordSide(sql.SQL("m.terms, cardinality(m.terms) AS dl,"), CTES, bm25_params)
"""BM25 over the morphemes of the scope rows."""
