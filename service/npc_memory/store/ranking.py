"""The DESIGN.md §2 score computed in SQL over a candidate statement: only the top ``limit`` rows leave the database.

One round trip, ~10 rows to decode instead of ~150. ``domain/scoring.py`` is the reference it must equal
(tests/test_search_ranking.py).
"""

from __future__ import annotations

from typing import Any

from psycopg import sql

from npc_memory.domain.model import Fusion, ScoredMemory, Scores, SearchQuery
from npc_memory.domain.scoring import FLAT_RANGE, RRF_K
from npc_memory.store.rows import memory_from_row

# Components as domain/scoring.py defines them: recency exp(-age/30 d) (never negative age), importance/10,
# relevance min-max over the candidates (clipped cosine when they are all equal, 0 without a query vector),
# keyword BM25 over the best BM25 among the candidates. RRF ranks break ties by id, as the reference does.
RANKED = """
SELECT r.*,
       CASE WHEN %(rrf)s THEN
           (%(w_recency)s / (%(rrf_k)s + r.rank_recency)
            + %(w_importance)s / (%(rrf_k)s + r.rank_importance)
            + CASE WHEN %(has_vector)s THEN %(w_relevance)s / (%(rrf_k)s + r.rank_relevance) ELSE 0.0::float8 END
            + CASE WHEN r.s_keyword > 0 THEN %(w_keyword)s / (%(rrf_k)s + r.rank_keyword) ELSE 0.0::float8 END)
           / %(rrf_best)s
       ELSE %(w_recency)s * r.s_recency + %(w_importance)s * r.s_importance
            + %(w_relevance)s * r.s_relevance + %(w_keyword)s * r.s_keyword
       END AS s_final
FROM (
    SELECT s.*,
           row_number() OVER (ORDER BY s.s_recency DESC, s.id)::float8 AS rank_recency,
           row_number() OVER (ORDER BY s.s_importance DESC, s.id)::float8 AS rank_importance,
           row_number() OVER (ORDER BY s.s_relevance DESC, s.id)::float8 AS rank_relevance,
           row_number() OVER (ORDER BY s.s_keyword DESC, s.id)::float8 AS rank_keyword
    FROM (
        SELECT c.*,
               exp(-GREATEST(%(now_epoch)s - date_part('epoch', c.valid_at), 0.0::float8)
                   / %(recency_seconds)s) AS s_recency,
               c.importance / 10.0::float8 AS s_importance,
               CASE WHEN NOT %(has_vector)s THEN 0.0::float8
                    WHEN max(c.cosine) OVER w - min(c.cosine) OVER w < %(flat_range)s
                        THEN LEAST(1.0::float8, GREATEST(0.0::float8, c.cosine))
                    ELSE (c.cosine - min(c.cosine) OVER w) / (max(c.cosine) OVER w - min(c.cosine) OVER w)
               END AS s_relevance,
               CASE WHEN max(c.bm25) OVER w <= 0 THEN 0.0::float8
                    ELSE GREATEST(c.bm25, 0.0::float8) / max(c.bm25) OVER w
               END AS s_keyword
        FROM ({candidates}) c
        WINDOW w AS ()
    ) s
) r
ORDER BY s_final DESC, r.valid_at DESC, r.id
LIMIT %(limit)s
"""


def ranked(candidates: sql.Composable) -> sql.Composed:
    """The statement ranking the rows of ``candidates`` (memory columns plus ``cosine`` and ``bm25``)."""
    return sql.SQL(RANKED).format(candidates=candidates)


def ranking_params(query: SearchQuery) -> dict[str, Any]:
    """The parameters RANKED adds to the candidate statement's own."""
    w = query.weights
    return {
        "rrf": query.fusion is Fusion.RRF,
        "has_vector": query.embedding is not None,
        "w_relevance": w.relevance,
        "w_keyword": w.keyword,
        "rrf_k": float(RRF_K),
        "rrf_best": (w.recency + w.importance + w.relevance + w.keyword) / (RRF_K + 1) or 1.0,
        "flat_range": FLAT_RANGE,
        "limit": query.limit,
    }


def scored_from_row(row: dict[str, Any]) -> ScoredMemory:
    """A ranked row as the domain's search hit."""
    return ScoredMemory(
        memory_from_row(row),
        Scores(
            recency=float(row["s_recency"]), importance=float(row["s_importance"]),
            relevance=float(row["s_relevance"]), keyword=float(row["s_keyword"]), final=float(row["s_final"]),
        ),
    )
