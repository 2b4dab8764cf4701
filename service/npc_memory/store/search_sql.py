"""The search statement, written once: scope rows, a keyword side, the candidate union, and the ranking.

A scope holds hundreds to a few thousand rows, so everything is exact over the scope: no approximate index
whose filter could drop rows. Three candidate lists (best cosine, best keyword score, best recency and
importance prior) are unioned, so a memory found only by its keywords is never lost, and the union is scored
and ranked in the same statement: only the ``limit`` best rows leave the database, in one round trip.
A query naming a period (``SearchQuery.period``) adds a fourth list, the best cosine among the memories
valid in that period, and with ``period_first`` those memories rank above the others.

The keyword side is a backend's CTE (store/search_bm25.py, store/search_pgroonga.py); the rest is shared.
A query without a vector runs a variant with no cosine and no dense list; a query without terms runs one with
no keyword CTE at all. A query with ``hops`` runs the ranked statement inside the link part
(store/search_links.py): still one statement.

Speed notes (EXPLAIN ANALYZE on 2,000-row scopes): every expression is float8 (date_part, not extract, whose
numeric result made the prior cost ~3 us a row); the scope is read once into a materialised CTE.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

from psycopg import sql

from npc_memory.domain.model import Fusion, SearchQuery
from npc_memory.domain.scoring import FLAT_RANGE, RECENCY_EXPONENT_CAP, RRF_K, SECONDS_PER_DAY
from npc_memory.store.compiled import Compiled, compile_statement
from npc_memory.store.filters import MEMORY_FILTER, filter_params
from npc_memory.store.keyword import KeywordSide, ResolvedKeywordBackend
from npc_memory.store.rows import MEMORY_COLUMNS
from npc_memory.store.search_bm25 import BM25, UNROLLED_TERMS, bm25_side, distinct_terms
from npc_memory.store.search_links import link_places, with_links
from npc_memory.store.search_pgroonga import PGROONGA
from npc_memory.store.view import view_params, visible, with_view

KEYWORD_SIDES: dict[ResolvedKeywordBackend, KeywordSide] = {"bm25": BM25, "pgroonga": PGROONGA}
"""Each keyword backend's part of the statement."""

# exp(-age / recency_days), age from valid_at to the request's `now`, never negative (a fact dated after `now` is
# brand new). The exponent is capped: PostgreSQL's exp() raises "value out of range: underflow" where the
# result would round to 0 (a fact ~61 years older than `now`), so an old fact scores exp(-cap) ~ 1e-304.
RECENCY = """exp(-LEAST(GREATEST(%(now_epoch)s - date_part('epoch', {valid_at}), 0.0::float8)
                         / %(recency_seconds)s, %(recency_cap)s))"""
IMPORTANCE = "{importance} / 10.0::float8"

# Stored and query vectors are unit length (embedders normalise, the API normalises caller vectors), so the
# cosine is the inner product: pgvector's <#> (negated) skips the two norms <=> computes for every row.
COSINE = "-(m.embedding <#> %(embedding)s::vector)"

SCOPE_ROWS = """,
scope_rows AS MATERIALIZED (
    SELECT m.id, m.valid_at, {keyword_columns}
           {cosine} AS cosine,
           %(w_recency)s * {recency} + %(w_importance)s * {importance} AS prior
    FROM {visible} m
    WHERE {filter}
)"""

# Each list breaks its ties by id, so the rows cut at its limit are the same on every plan (many rows share a
# keyword score: the same word once in texts of one length), and the same the in-memory ranking cuts
# (domain/scope_rank.py).
# Each list carries the cosine (one value per id, so UNION still removes repeats): the final join then never
# goes back over the scope rows, which a generic plan (estimating one scope row) made a nested loop.
# With a keyword side that scores every scope row (KeywordSide.every_row), every list reads that side's CTE and
# carries the score as well ({source} and {carried}).
DENSE_TOP = "(SELECT id, cosine{carried} FROM {source} ORDER BY cosine DESC, id LIMIT %(k)s) UNION "
KEYWORD_TOP = "(SELECT id, cosine{carried} FROM keyword{matching} ORDER BY score DESC, id LIMIT %(k)s) UNION "
PRIOR_TOP = "(SELECT id, cosine{carried} FROM {source} ORDER BY prior DESC, id LIMIT %(k)s)"
PERIOD_TOP = """(SELECT id, cosine{carried} FROM {source}
                 WHERE valid_at >= %(period_from)s AND valid_at < %(period_to)s
                 ORDER BY cosine DESC, prior DESC, id LIMIT %(k)s) UNION """

# The final step fetches each candidate's columns by key (an index probe per candidate, ~100-150 of them) instead
# of hashing the whole scope again: at 2,000 rows that second scope scan was 3.6 of 11.9 ms (EXPLAIN ANALYZE). The
# probe is a LATERAL subquery kept whole by OFFSET 0: joined to the candidates, the generic plan (estimating a
# handful of rows on both sides) fetched the rows once, then compared every candidate with every row (99 x 99 in
# a nested loop over the materialised rows, ~1.2 ms of a 4 ms statement, benchmarks.plan_paths under
# auto_explain; tests/store/test_plans.py).
CANDIDATES = """,
candidates AS ({dense}{keyword}{period}{prior}){scored}
SELECT {columns}, c.cosine, {keyword_score} AS keyword_score
FROM {listed} c
CROSS JOIN LATERAL (SELECT * FROM {visible} m WHERE m.id = c.id OFFSET 0) m
"""

# The candidates' keyword scores, by grouping the candidates together with the keyword rows rather than joining
# them: a prepared statement's generic plan estimates a handful of rows on both sides and joined them by a
# nested loop, which with common words (1,505 keyword rows at 2,000 rows) compared every candidate with every
# keyword row. Grouping costs the same whatever the estimate: with the generic plan forced, 31.1 ms p50 before,
# 14.0 ms after (benchmarks/view_cost.py --plan-cache-mode force_generic_plan --before-src).
SCORED = """,
scored AS (
    SELECT x.id, max(x.cosine) AS cosine, max(x.score) AS score
    FROM (SELECT id, cosine, NULL::float8 AS score, true AS listed FROM candidates
          UNION ALL
          SELECT id, NULL::float8, score, false FROM keyword) x
    GROUP BY x.id
    HAVING bool_or(x.listed)
)"""

# The components, each in [0, 1]: recency, importance / 10, relevance min-max over the candidates (the clipped
# cosine when they are all equal, 0 without a query vector), keyword score over the best among the candidates.
COMPONENTS = """
    SELECT c.*, {recency} AS s_recency, {importance} AS s_importance,
           CASE WHEN NOT %(has_vector)s THEN 0.0::float8
                WHEN max(c.cosine) OVER w - min(c.cosine) OVER w < %(flat_range)s
                    THEN LEAST(1.0::float8, GREATEST(0.0::float8, c.cosine))
                ELSE (c.cosine - min(c.cosine) OVER w) / (max(c.cosine) OVER w - min(c.cosine) OVER w)
           END AS s_relevance,
           CASE WHEN max(c.keyword_score) OVER w <= 0 THEN 0.0::float8
                ELSE GREATEST(c.keyword_score, 0.0::float8) / max(c.keyword_score) OVER w
           END AS s_keyword
    FROM ({candidates}) c
    WINDOW w AS ()
"""

# Weighted fusion sums the components by weight. Ties of the final score go to the newer fact, then the id.
WEIGHTED = """
SELECT r.*, %(w_recency)s * r.s_recency + %(w_importance)s * r.s_importance
            + %(w_relevance)s * r.s_relevance + %(w_keyword)s * r.s_keyword AS s_final
FROM ({components}) r
ORDER BY {period_first}s_final DESC, r.valid_at DESC, r.id
LIMIT %(limit)s
"""

# RRF sums weight / (60 + rank), scaled so first on every side scores 1, ranks breaking ties by id. Its four
# rankings are a sort and a window pass each over the candidates, so they are only in the RRF statement (the
# weighted default paid ~0.6 ms for them at 2,000-row scopes, EXPLAIN ANALYZE, benchmarks/view_cost.py).
RRF = """
SELECT r.*,
       (%(w_recency)s / (%(rrf_k)s + r.rank_recency)
        + %(w_importance)s / (%(rrf_k)s + r.rank_importance)
        + CASE WHEN %(has_vector)s THEN %(w_relevance)s / (%(rrf_k)s + r.rank_relevance) ELSE 0.0::float8 END
        + CASE WHEN r.s_keyword > 0 THEN %(w_keyword)s / (%(rrf_k)s + r.rank_keyword) ELSE 0.0::float8 END)
       / %(rrf_best)s AS s_final
FROM (
    SELECT s.*,
           row_number() OVER (ORDER BY s.s_recency DESC, s.id)::float8 AS rank_recency,
           row_number() OVER (ORDER BY s.s_importance DESC, s.id)::float8 AS rank_importance,
           row_number() OVER (ORDER BY s.s_relevance DESC, s.id)::float8 AS rank_relevance,
           row_number() OVER (ORDER BY s.s_keyword DESC, s.id)::float8 AS rank_keyword
    FROM ({components}) s
) r
ORDER BY {period_first}s_final DESC, r.valid_at DESC, r.id
LIMIT %(limit)s
"""


def _signals(table: str) -> dict[str, sql.Composable]:
    """The recency and importance components of ``table``'s row."""
    return {
        "recency": sql.SQL(RECENCY).format(valid_at=sql.Identifier(table, "valid_at")),
        "importance": sql.SQL(IMPORTANCE).format(importance=sql.Identifier(table, "importance")),
    }


# With period_first, the rows valid in the period come first; the flag is a parameter, so "candidates only"
# shares the statement.
PERIOD_FIRST = "(%(period_first)s AND r.valid_at >= %(period_from)s AND r.valid_at < %(period_to)s) DESC, "


def _side(keyword: ResolvedKeywordBackend | None, term_count: int) -> KeywordSide | None:
    if keyword == "bm25":
        return bm25_side(term_count)
    return KEYWORD_SIDES[keyword] if keyword else None


def _candidates(has_vector: bool, keyword: ResolvedKeywordBackend | None, period: bool,
                term_count: int = 0, shared: bool = False) -> sql.Composed:
    """The candidate rows: memory columns, ``cosine`` and the raw ``keyword_score``."""
    side = _side(keyword, term_count)
    scope = sql.SQL(SCOPE_ROWS).format(
        keyword_columns=side.scope_columns if side else sql.SQL(""),
        cosine=sql.SQL(COSINE if has_vector else "0.0::float8"),
        filter=MEMORY_FILTER,
        visible=visible(shared),
        **_signals("m"),
    )
    every_row = side is not None and side.every_row
    lists = {"source": sql.SQL("keyword" if every_row else "scope_rows"),
             "carried": sql.SQL(", score" if every_row else ""),
             "matching": sql.SQL(" WHERE score > 0.0::float8" if every_row else "")}
    union = sql.SQL(CANDIDATES).format(
        dense=sql.SQL(DENSE_TOP if has_vector else "").format(**lists),
        keyword=sql.SQL(KEYWORD_TOP if side else "").format(**lists),
        period=sql.SQL(PERIOD_TOP if period else "").format(**lists),
        prior=sql.SQL(PRIOR_TOP).format(**lists),
        columns=MEMORY_COLUMNS,
        keyword_score=sql.SQL("COALESCE(c.score, 0.0::float8)" if side else "0.0::float8"),
        scored=sql.SQL(SCORED if side and not every_row else ""),
        listed=sql.SQL("scored" if side and not every_row else "candidates"),
        visible=visible(shared),
    )
    return with_view(sql.Composed([scope, side.ctes if side else sql.SQL(""), union]), shared)


Variant = tuple[bool, ResolvedKeywordBackend | None, bool, int, bool, bool]
"""Whether the query has a vector, the keyword side it runs (None for a query without terms or with keyword
weight 0), whether it names a period, its distinct term count (BM25 writes a statement per count), whether
it reads the player's shared memories too (store/view.py says why that is a statement of its own), and whether
it fuses by RRF (the only fusion that ranks each component)."""


@cache
def _ranked(v: Variant) -> sql.Composed:
    components = sql.SQL(COMPONENTS).format(candidates=_candidates(*v[:5]), **_signals("c"))
    return sql.SQL(RRF if v[5] else WEIGHTED).format(components=components,
                                                     period_first=sql.SQL(PERIOD_FIRST if v[2] else ""))


@cache
def _linked(v: Variant) -> sql.Composed:
    """The ranked statement followed by the link part (store/search_links.py), for searches with ``hops``."""
    return with_links(_ranked(v), MEMORY_FILTER, sql.SQL(COSINE if v[0] else "0.0::float8"), **_signals("m"),
                      shared=v[4])


def variant(query: SearchQuery, terms: Sequence[str], backend: ResolvedKeywordBackend) -> Variant:
    """The statement variant a query needs: no cosine without a vector, no keyword side without terms or weight.

    With keyword weight 0 the keyword side cannot change a score, so it is not run (its candidate list goes too).
    """
    keyword = backend if terms and query.weights.keyword > 0 else None
    count = len(distinct_terms(terms)) if keyword == "bm25" else 0
    return (query.embedding is not None, keyword, query.period is not None, count if count <= UNROLLED_TERMS else 0,
            query.include_shared, query.fusion is Fusion.RRF)


def search_statement(query: SearchQuery, terms: Sequence[str], backend: ResolvedKeywordBackend) -> sql.Composed:
    """The statement the service runs for the query: its ``limit`` best memories with their scores."""
    return (_linked if query.hops else _ranked)(variant(query, terms, backend))


@cache
def _compiled(v: Variant, linked: bool) -> Compiled:
    return compile_statement(_linked(v) if linked else _ranked(v))


def compiled_search(query: SearchQuery, terms: Sequence[str], backend: ResolvedKeywordBackend) -> Compiled:
    """``search_statement`` in ``$n`` form (store/compiled.py), compiled once per variant."""
    return _compiled(variant(query, terms, backend), query.hops > 0)


def candidate_statement(query: SearchQuery, terms: Sequence[str], backend: ResolvedKeywordBackend) -> sql.Composed:
    """The unranked candidate union the search statement ranks (for checking the ranking against a reference)."""
    return _candidates(*variant(query, terms, backend)[:5])


def search_params(
    query: SearchQuery, terms: Sequence[str], per_side: int, backend: ResolvedKeywordBackend
) -> dict[str, Any]:
    """The named parameters of either statement; ``per_side`` rows are taken from each candidate list."""
    _, keyword, _, count, _, _ = variant(query, terms, backend)
    w = query.weights
    params = filter_params(query.filter, query.as_of or query.now, query.include_invalidated) | view_params(
        query.view, query.include_shared) | {
        "user_id": query.scope.user_id,
        "heroine_id": query.scope.heroine_id,
        "embedding": query.embedding,
        "k": per_side,
        "now_epoch": query.now.timestamp(),
        "recency_seconds": query.recency_days * SECONDS_PER_DAY,
        "recency_cap": RECENCY_EXPONENT_CAP,
        "w_recency": w.recency,
        "w_importance": w.importance,
        "w_relevance": w.relevance,
        "w_keyword": w.keyword,
        "has_vector": query.embedding is not None,
        "rrf_k": float(RRF_K),
        "rrf_best": w.rrf_best,
        "flat_range": FLAT_RANGE,
        "limit": query.limit,
        "hops": query.hops,
        "link_places": link_places(query.limit, query.hops),
    }
    if query.period is not None:
        params |= {"period_from": query.period[0], "period_to": query.period[1], "period_first": query.period_first}
    side = _side(keyword, count)
    return params | side.params(terms) if side else params
