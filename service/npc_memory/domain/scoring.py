"""THE search score: the four components and the final score of a search's candidates, for every path.

Whatever gathered the candidates (the statement, store/search_sql.py; a scope held in memory,
search/rank.py; the rows a search's links reached, store/search_links.py) hands their raw signals here as
columns (``Gathered``), and ``rank`` scores and orders them. The components, each in [0, 1]:

- recency ``exp(-age / recency_days)``, the age from ``valid_at`` to the request's ``now``, never negative (a fact
  dated after ``now`` is brand new), the exponent capped at ``RECENCY_EXPONENT_CAP``;
- importance / 10;
- relevance: the cosine min-max normalised over the candidates (the clipped cosine when they are all within
  ``FLAT_RANGE``; 0 without a query vector);
- keyword: the raw keyword score over the best among the candidates (0 without a hit).

The final score is their weighted sum (a memory of tier source, a stated dialogue's turn, weighted by
``SearchQuery.turn_weights`` when set), or a reciprocal-rank fusion (``Fusion.RRF``, ``weights`` for all). Hits
are ordered by the final score, ties to the newer fact, then the smaller id (PostgreSQL's uuid order); with
``period_first`` the rows valid from within the query's period come before all others.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from npc_memory.domain.model import Fusion, Scores, SearchQuery, Weights
from npc_memory.domain.score_constants import (
    BM25_B,
    BM25_K1,
    FLAT_RANGE,
    RECENCY_DAYS,
    RECENCY_EXPONENT_CAP,
    RECENCY_HALF_LIFE_DAYS,
    RRF_K,
    SECONDS_PER_DAY,
)

__all__ = [
    "BM25_B", "BM25_K1", "FLAT_RANGE", "RECENCY_DAYS", "RECENCY_EXPONENT_CAP", "RECENCY_HALF_LIFE_DAYS", "RRF_K",
    "SECONDS_PER_DAY", "Gathered", "Ranked", "in_period", "keyword", "order", "prior", "rank", "reached",
    "recency", "relevance",
]

Floats = npt.NDArray[np.float64]
Indices = npt.NDArray[np.intp]
Ids = npt.NDArray[np.uint64]


@dataclass(frozen=True)
class Gathered:
    """A search's candidates as columns of equal length: every raw signal the score needs, nothing scored yet."""

    cosine: Floats
    """The cosine with the query vector (zeros when the query has none)."""
    keyword: Floats
    """The raw keyword score (BM25, or PGroonga's); 0 where the row matched no query term."""
    valid_at: Floats
    """Epoch seconds."""
    importance: Floats
    """1-10, as stored."""
    id_high: Ids
    id_low: Ids
    """The row's UUID as two unsigned halves: the order PostgreSQL sorts uuids in (the last tie-break)."""
    turn: npt.NDArray[np.bool_] | None = None
    """Which candidates are of tier source (a stated dialogue's turns): they take ``SearchQuery.turn_weights``."""

    @property
    def size(self) -> int:
        """How many candidates."""
        return int(self.cosine.size)


@dataclass(frozen=True)
class Ranked:
    """The best candidates, best first: their positions in ``Gathered`` and their scores, aligned."""

    positions: Indices
    recency: Floats
    importance: Floats
    relevance: Floats
    keyword: Floats
    final: Floats

    def scores(self) -> list[Scores]:
        """Each hit's ``Scores``, in order (Python floats, one column at a time)."""
        parts = (self.recency, self.importance, self.relevance, self.keyword, self.final)
        return list(map(Scores, *(p.tolist() for p in parts)))


def recency(valid_at: Floats, now: float, recency_days: float) -> Floats:
    """``exp(-max(now - valid_at, 0) / recency_days)``, the exponent capped (``RECENCY_EXPONENT_CAP``)."""
    return np.exp(np.clip((valid_at - now) / (recency_days * SECONDS_PER_DAY), -RECENCY_EXPONENT_CAP, 0.0))


def prior(valid_at: Floats, importance: Floats, query: SearchQuery) -> Floats:
    """The weighted recency and importance of rows: what the prior candidate list takes the best of."""
    w = query.weights
    return w.recency * recency(valid_at, query.now.timestamp(), query.recency_days) + w.importance * importance / 10.0


def relevance(cosine: Floats, has_vector: bool) -> Floats:
    """The cosines min-max normalised over the candidates (clipped when flat); zeros without a query vector."""
    if not has_vector or cosine.size == 0:
        return np.zeros(cosine.size)
    low, high = float(cosine.min()), float(cosine.max())
    if high - low < FLAT_RANGE:
        return np.clip(cosine, 0.0, 1.0)
    return (cosine - low) / (high - low)


def keyword(raw: Floats) -> Floats:
    """The raw keyword scores over the best among the candidates; zeros when none matched."""
    best = float(raw.max()) if raw.size else 0.0
    return np.zeros(raw.size) if best <= 0.0 else np.maximum(raw, 0.0) / best


def order(final: Floats, valid_at: Floats, id_high: Ids, id_low: Ids,
          first: npt.NDArray[np.bool_] | None = None) -> Indices:
    """Positions by final score descending, then the newer fact, then the smaller id (``first`` rows before all)."""
    keys = (id_low, id_high, -valid_at, -final) if first is None else (id_low, id_high, -valid_at, -final, ~first)
    return np.lexsort(keys)


def _rrf(components: tuple[Floats, Floats, Floats, Floats], w: Weights, has_vector: bool, id_high: Ids,
         id_low: Ids) -> Floats:
    """Each side's weight / (RRF_K + rank), ranks by the component then the id, scaled so first everywhere is 1."""
    ranks = []
    for values in components:
        rank_of = np.empty(values.size)
        rank_of[np.lexsort((id_low, id_high, -values))] = np.arange(1, values.size + 1, dtype=np.float64)
        ranks.append(rank_of)
    k = float(RRF_K)
    total = (w.recency / (k + ranks[0]) + w.importance / (k + ranks[1])
             + (w.relevance / (k + ranks[2]) if has_vector else 0.0)
             + np.where(components[3] > 0, w.keyword / (k + ranks[3]), 0.0))
    best = (w.recency + w.importance + w.relevance + w.keyword) / (k + 1) or 1.0  # first on every side: 1
    return np.asarray(total / best, dtype=np.float64)


def in_period(valid_at: Floats, query: SearchQuery) -> npt.NDArray[np.bool_]:
    """Which rows became valid within the query's period ``[start, end)`` (none without a period)."""
    if query.period is None:
        return np.zeros(valid_at.size, dtype=np.bool_)
    start, end = (t.timestamp() for t in query.period)
    return np.asarray((valid_at >= start) & (valid_at < end))


def _weights(g: Gathered, query: SearchQuery) -> tuple[Floats | float, Floats | float, Floats | float,
                                                       Floats | float]:
    """The weighted sum's four weights: per candidate where turns (tier source) take other weights than facts."""
    w, t = query.weights, query.turn_weights
    if t is None or t == w or g.turn is None or not g.turn.any():
        return w.recency, w.importance, w.relevance, w.keyword
    turn = g.turn
    return (np.where(turn, t.recency, w.recency), np.where(turn, t.importance, w.importance),
            np.where(turn, t.relevance, w.relevance), np.where(turn, t.keyword, w.keyword))


def rank(gathered: Gathered, query: SearchQuery) -> Ranked:
    """The query's ``limit`` best candidates with their four components and final score, best first."""
    g, w = gathered, query.weights
    has_vector = query.embedding is not None
    s_recency = recency(g.valid_at, query.now.timestamp(), query.recency_days)
    s_importance = g.importance / 10.0
    s_relevance = relevance(g.cosine, has_vector)
    s_keyword = keyword(g.keyword)
    if query.fusion is Fusion.RRF:
        final = _rrf((s_recency, s_importance, s_relevance, s_keyword), w, has_vector, g.id_high, g.id_low)
    else:
        wr, wi, wrel, wkw = _weights(g, query)
        final = wr * s_recency + wi * s_importance + wrel * s_relevance + wkw * s_keyword
    first = in_period(g.valid_at, query) if query.period is not None and query.period_first else None
    chosen = order(final, g.valid_at, g.id_high, g.id_low, first)[:query.limit]
    return Ranked(chosen, s_recency[chosen], s_importance[chosen], s_relevance[chosen], s_keyword[chosen],
                  final[chosen])


def reached(gathered: Gathered, query: SearchQuery) -> Ranked:
    """Memories a search's links reached, scored and ordered among themselves (all of them, best first).

    They were reached, not matched, so they are not normalised against the ranked candidates: relevance is the
    clipped raw cosine, keyword is 0, and the final score is the weighted sum of those (whatever the fusion). Ties
    go to the smaller id. The caller orders them by hops first (store/search_links.py).
    """
    g, w = gathered, query.weights
    s_recency = recency(g.valid_at, query.now.timestamp(), query.recency_days)
    s_importance = g.importance / 10.0
    s_relevance = np.clip(g.cosine, 0.0, 1.0)
    final = w.recency * s_recency + w.importance * s_importance + w.relevance * s_relevance
    chosen = np.lexsort((g.id_low, g.id_high, -final))
    return Ranked(chosen, s_recency[chosen], s_importance[chosen], s_relevance[chosen], np.zeros(chosen.size),
                  final[chosen])
