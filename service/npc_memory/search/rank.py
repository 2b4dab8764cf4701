"""A search's candidates gathered from one scope's rows held in memory as columns (search/held.py).

The statement's gathering (store/search_sql.py, store/search_bm25.py), step for step: the rows valid at the
request's time and matching its filter, each row's cosine, prior and BM25 score over those rows, and the union of
the candidate lists (best cosine, best keyword score, best prior, and a named period's best cosine, ``per_side``
each, ties to the smaller id). The candidates are then scored by the one scoring function (domain/scoring.py), as
the statement's are. Cosines are float32 inner products, as pgvector computes them; the order of the additions
differs, so two rows whose cosines differ by ~1e-7 may swap.

Only queries the plain rows can answer are ranked here (``servable``): the live timeline (the scope's own rows, or
with the player's shared rows of other heroines when the query includes them), no links to follow; every other
query runs the statement.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from npc_memory.domain import scoring
from npc_memory.domain.model import LIVE, Scores, SearchQuery, Tier
from npc_memory.search.columns import Floats, Indices, ScopeColumns
from npc_memory.search.kept import MAX_KEYWORD_SIDES, Kept, KeptMemo, select

SOURCE = Tier.SOURCE.value


class RankedRow(NamedTuple):
    """A hit: its row index in the columns, its score components, final score and raw cosine.

    A named tuple of plain numbers, made by one ``map`` over the picked columns: a few dozen are made per search,
    and the frozen ``Scores`` of each, dearer to make, only for the hits answered (``scores``).
    """

    row: int
    recency: float
    importance: float
    relevance: float
    keyword: float
    final: float
    cosine: float

    @property
    def scores(self) -> Scores:
        """The hit's ``Scores``."""
        return Scores(self.recency, self.importance, self.relevance, self.keyword, self.final)


def servable(query: SearchQuery) -> bool:
    """Whether the plain rows (a scope's, with the player's shared ones if asked) can answer as the statement would."""
    return query.view == LIVE and query.hops == 0


def _top(values: Floats, among: Indices | None, k: int, high: npt.NDArray[np.uint64],
         low: npt.NDArray[np.uint64]) -> tuple[Indices | slice, ...]:
    """The ``k`` positions of ``among`` (None: all) with the largest values, ties to the smaller id, as index parts.

    All of them if there are no more than ``k``.
    """
    v = values if among is None else values[among]
    if v.size <= k:
        return (slice(None) if among is None else among,)
    cut = np.partition(v, v.size - k)[v.size - k]
    above, tied = np.flatnonzero(v > cut), np.flatnonzero(v == cut)
    if among is not None:
        above, tied = among[above], among[tied]
    need = k - above.size
    if tied.size > need:
        tied = tied[np.lexsort((low[tied], high[tied]))[:need]]
    return above, tied


def _mark(union: npt.NDArray[np.bool_], parts: tuple[Indices | slice, ...]) -> None:
    """Mark the positions of ``parts`` (``_top``'s answer) in ``union``."""
    for part in parts:
        union[part] = True


def _keyword_side(cols: ScopeColumns, kept: Kept, terms: Sequence[str], per_side: int,
                  ) -> tuple[Floats, tuple[Indices | slice, ...]]:
    """Every kept row's BM25 score and where the best ``per_side`` scoring rows are, once per selection and query.

    Players repeat themselves ("좋아해", "기억나?"), often in words most of the scope holds: the same words again cost
    a lookup, not their postings, until the selection changes.
    """
    key = (tuple(dict.fromkeys(terms)), per_side)
    found = kept.keyword_sides.get(key)
    if found is None:
        if len(kept.keyword_sides) >= MAX_KEYWORD_SIDES:
            kept.keyword_sides.clear()
        score = _bm25(cols, kept, terms)
        found = kept.keyword_sides[key] = (
            score, _top(score, np.flatnonzero(score > 0.0), per_side, kept.high, kept.low))
    return found


def _bm25(cols: ScopeColumns, kept: Kept, terms: Sequence[str]) -> Floats:
    """Each kept row's BM25 score: the sum of its query terms' shares (``Kept.term_share``), in the terms' order."""
    score = np.zeros(kept.rows.size)
    if kept.avgdl == 0.0:
        return score
    for term in dict.fromkeys(terms):
        at, share = kept.term_share(cols, term)
        if at.size:
            score[at] += share
    return score


def _candidates(cols: ScopeColumns, kept: Kept, query: SearchQuery, terms: Sequence[str], per_side: int,
                prior: Floats, cosine: Floats) -> tuple[Indices, Floats]:
    """The union of the candidate lists (positions, ascending) and every kept row's keyword score (zeros: no side).

    The union is marked in a mask: np.unique of the concatenated lists gave the same rows, but each distinct NumPy
    routine is slow to start on a cache the model or other requests emptied.
    """
    high, low = kept.high, kept.low
    union = np.zeros(kept.rows.size, dtype=np.bool_)
    _mark(union, _top(prior, None, per_side, high, low))
    if query.embedding is not None:
        _mark(union, _top(cosine, None, per_side, high, low))
    if terms and query.weights.keyword > 0:
        score, best_keyword = _keyword_side(cols, kept, terms, per_side)
        _mark(union, best_keyword)
    else:
        score = np.zeros(kept.rows.size)
    if query.period is not None:  # the period's best by cosine, then prior, then id
        inside = np.flatnonzero(scoring.in_period(kept.valid_at, query))
        order = np.lexsort((low[inside], high[inside], -prior[inside], -cosine[inside]))
        union[inside[order[:per_side]]] = True
    return np.flatnonzero(union), score


def rank(cols: ScopeColumns, query: SearchQuery, terms: Sequence[str], per_side: int,
         memo: KeptMemo | None = None, product: npt.NDArray[np.float32] | None = None) -> list[RankedRow]:
    """The query's ``limit`` best rows: ``terms`` score the keyword side (none: no keyword side).

    ``memo``: the scope's last selection of rows, reused when the query keeps the same rows (scope_kept.py).
    ``product``: ``cols.vectors @ query.embedding`` if the caller already has it.
    """
    kept = memo.kept(cols, query) if memo is not None else select(cols, query)
    rows = kept.rows
    if rows.size == 0:
        return []
    prior = scoring.prior(kept.valid_at, kept.importance, query)
    if query.embedding is not None:
        # Every row's product, then the kept ones: indexing the matrix first would copy it (3 MB at 2,000 rows).
        if product is None:
            product = cols.vectors @ query.embedding
        cosine = (product if kept.every_row else product[rows]).astype(np.float64)
    else:
        cosine = np.zeros(rows.size)
    c, score = _candidates(cols, kept, query, terms, per_side, prior, cosine)
    c_cos = cosine[c]
    turn = cols.labels["tier"][rows[c]] == SOURCE if query.turn_weights is not None else None
    ranked = scoring.rank(scoring.Gathered(c_cos, score[c], kept.valid_at[c], kept.importance[c], kept.high[c],
                                           kept.low[c], turn), query)
    at = ranked.positions
    # Python numbers a column at a time (tolist), not a NumPy scalar per value and field.
    picked = [part.tolist() for part in (rows[c][at], ranked.recency, ranked.importance, ranked.relevance,
                                         ranked.keyword, ranked.final, c_cos[at])]
    return list(map(RankedRow, *picked))
