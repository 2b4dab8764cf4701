"""The search statement, written once: scope rows, a keyword side, and the candidate union it gathers.

A scope holds hundreds to a few thousand rows, so everything is exact over the scope: no approximate index
whose filter could drop rows. Three candidate lists (best cosine, best keyword score, best recency and
importance prior) are unioned, so a memory found only by its keywords is never lost, and the union's rows leave
the database with their raw signals (cosine, keyword score) in one round trip; the one scoring function
(domain/scoring.py) scores and ranks them. A query naming a period (``SearchQuery.period``) adds a fourth list,
the best cosine among the memories valid in that period.

The keyword side is a backend's CTE (store/search_bm25.py, store/search_pgroonga.py); the rest is shared.
A query without a vector runs a variant with no cosine and no dense list; a query without terms runs one with
no keyword CTE at all. A query with ``hops`` follows links from the ranked rows with a second statement
(store/search_links.py).

Speed notes (EXPLAIN ANALYZE on 2,000-row scopes): every expression is float8 (date_part, not extract, whose
numeric result made the prior cost ~3 us a row); the scope is read once into a materialised CTE.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

from psycopg import sql

from npc_memory.domain.model import SearchQuery
from npc_memory.domain.scoring import RECENCY_EXPONENT_CAP, SECONDS_PER_DAY
from npc_memory.store.compiled import Compiled, compile_statement
from npc_memory.store.filters import MEMORY_FILTER, filter_params
from npc_memory.store.keyword import KeywordSide, ResolvedKeywordBackend
from npc_memory.store.rows import MEMORY_COLUMNS
from npc_memory.store.search_bm25 import BM25, UNROLLED_TERMS, bm25_side, distinct_terms
from npc_memory.store.search_links import with_links
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
# (search/rank.py).
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
# of hashing the whole scope again (a second scan of the scope, a large share of the statement). The
# probe is a LATERAL subquery kept whole by OFFSET 0: joined to the candidates, the generic plan (estimating a
# handful of rows on both sides) fetched the rows once, then compared every candidate with every row (99 x 99 in
# a nested loop over the materialised rows, seen under auto_explain; tests/store/test_plans.py).
CANDIDATES = """,
candidates AS ({dense}{keyword}{period}{prior}){scored}
SELECT {columns}, c.cosine, {keyword_score} AS keyword_score
FROM {listed} c
CROSS JOIN LATERAL (SELECT * FROM {visible} m WHERE m.id = c.id OFFSET 0) m
"""

# The candidates' keyword scores, by grouping the candidates together with the keyword rows rather than joining
# them: a prepared statement's generic plan estimates a handful of rows on both sides and joined them by a
# nested loop, which with common words (1,505 keyword rows at 2,000 rows) compared every candidate with every
# keyword row. Grouping costs the same whatever the estimate, and with the generic plan forced it halved the
# statement for common words.
SCORED = """,
scored AS (
    SELECT x.id, max(x.cosine) AS cosine, max(x.score) AS score
    FROM (SELECT id, cosine, NULL::float8 AS score, true AS listed FROM candidates
          UNION ALL
          SELECT id, NULL::float8, score, false FROM keyword) x
    GROUP BY x.id
    HAVING bool_or(x.listed)
)"""

def _signals(table: str) -> dict[str, sql.Composable]:
    """The recency and importance of ``table``'s row (the prior list's order: the statement's gathering only)."""
    return {
        "recency": sql.SQL(RECENCY).format(valid_at=sql.Identifier(table, "valid_at")),
        "importance": sql.SQL(IMPORTANCE).format(importance=sql.Identifier(table, "importance")),
    }


def _side(keyword: ResolvedKeywordBackend | None, term_count: int) -> KeywordSide | None:
    if keyword == "bm25":
        return bm25_side(term_count)
    return KEYWORD_SIDES[keyword] if keyword else None


@cache
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


Variant = tuple[bool, ResolvedKeywordBackend | None, bool, int, bool]
"""Whether the query has a vector, the keyword side it runs (None for a query without terms or with keyword
weight 0), whether it names a period, its distinct term count (BM25 writes a statement per count), and whether
it reads the player's shared memories too (store/view.py says why that is a statement of its own)."""


def variant(query: SearchQuery, terms: Sequence[str], backend: ResolvedKeywordBackend) -> Variant:
    """The statement variant a query needs: no cosine without a vector, no keyword side without terms or weight.

    With keyword weight 0 the keyword side cannot change a score, so it is not run (its candidate list goes too).
    """
    keyword = backend if terms and query.weights.keyword > 0 else None
    count = len(distinct_terms(terms)) if keyword == "bm25" else 0
    return (query.embedding is not None, keyword, query.period is not None, count if count <= UNROLLED_TERMS else 0,
            query.include_shared)


def search_statement(query: SearchQuery, terms: Sequence[str], backend: ResolvedKeywordBackend) -> sql.Composed:
    """The statement the service runs for the query: its candidates' rows with ``cosine`` and ``keyword_score``."""
    return _candidates(*variant(query, terms, backend))


def links_statement(query: SearchQuery) -> sql.Composed:
    """The statement that follows a search's links from its ranked rows (``top_ids``, ``top_scores``)."""
    return with_links(MEMORY_FILTER, sql.SQL(COSINE if query.embedding is not None else "0.0::float8"),
                      query.include_shared)


@cache
def _compiled(v: Variant) -> Compiled:
    return compile_statement(_candidates(*v))


@cache
def _compiled_links(has_vector: bool, shared: bool) -> Compiled:
    return compile_statement(with_links(MEMORY_FILTER, sql.SQL(COSINE if has_vector else "0.0::float8"), shared))


def compiled_search(query: SearchQuery, terms: Sequence[str], backend: ResolvedKeywordBackend) -> Compiled:
    """``search_statement`` in ``$n`` form (store/compiled.py), compiled once per variant."""
    return _compiled(variant(query, terms, backend))


def compiled_links(query: SearchQuery) -> Compiled:
    """``links_statement`` in ``$n`` form, compiled once per variant."""
    return _compiled_links(query.embedding is not None, query.include_shared)


def search_params(
    query: SearchQuery, terms: Sequence[str], per_side: int, backend: ResolvedKeywordBackend
) -> dict[str, Any]:
    """The named parameters of either statement; ``per_side`` rows are taken from each candidate list."""
    _, keyword, _, count, _ = variant(query, terms, backend)
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
        "hops": query.hops,
    }
    if query.period is not None:
        params |= {"period_from": query.period[0], "period_to": query.period[1]}
    side = _side(keyword, count)
    return params | side.params(terms) if side else params
