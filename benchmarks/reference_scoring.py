"""The search score as plain Python: the reference the service's ranking SQL must equal, and the benchmark's ranker.

tests/store/test_search_ranking.py checks the SQL against ``rank`` on the same candidates; benchmarks/quality ranks
gathered candidates every way it compares, including relevance calibrations the service does not offer.
The constants are the service's own (npc_memory.domain.scoring).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from npc_memory.domain.model import Fusion, Memory, ScoredMemory, Scores, SearchQuery, Weights
from npc_memory.domain.scoring import FLAT_RANGE, RECENCY_DAYS, RECENCY_EXPONENT_CAP, RRF_K, SECONDS_PER_DAY


@dataclass(frozen=True)
class Candidate:
    """A memory from the candidate union with its raw signals, before scoring."""

    memory: Memory
    cosine: float
    keyword: float
    """The raw keyword score (BM25, or PGroonga's); 0 without a hit."""


def recency_score(valid_at: datetime, now: datetime, recency_days: float = RECENCY_DAYS) -> float:
    """``exp(-age_days / recency_days)``, the exponent capped as in SQL; a fact dated after ``now`` is brand new."""
    age_days = max(0.0, (now - valid_at).total_seconds() / SECONDS_PER_DAY)
    return math.exp(-min(age_days / recency_days, RECENCY_EXPONENT_CAP))


def importance_score(importance: int) -> float:
    """Importance 1-10 mapped to 0.1-1.0."""
    return importance / 10.0


class Calibration(StrEnum):
    """How a raw cosine becomes the relevance component (compared in benchmarks/quality)."""

    RAW = "raw"
    """The cosine clipped to [0, 1]."""
    MINMAX = "minmax"
    """Min-max over the candidates, as Generative Agents does (what the service does)."""
    FLOOR = "floor"
    """``(cosine - floor) / (1 - floor)`` clipped: a fixed floor learned from the model's cosines."""


@dataclass(frozen=True)
class RelevanceCalibration:
    """The calibration in use and, for FLOOR, the cosine that maps to 0."""

    method: Calibration = Calibration.MINMAX
    floor: float = 0.75


# Min-max won on the Korean benchmark (docs/search.md): raw cosine lets importance outweigh meaning, and a
# fixed floor either saturates or compresses depending on the query.
DEFAULT_CALIBRATION = RelevanceCalibration()


def _clip(x: float) -> float:
    return min(1.0, max(0.0, x))


def relevance_scores(
    cosines: Sequence[float], has_query: bool, calibration: RelevanceCalibration = DEFAULT_CALIBRATION
) -> list[float]:
    """Cosines calibrated (min-max over the candidates by default) so meaning spans [0, 1].

    Multilingual-e5 cosines bunch between ~0.75 and ~0.9: raw, they would let a 0.15 importance weight
    outweigh meaning. With min-max and one candidate (or all equal) the clipped raw cosine is kept.
    """
    if not has_query or not cosines:
        return [0.0] * len(cosines)
    if calibration.method is Calibration.RAW:
        return [_clip(c) for c in cosines]
    if calibration.method is Calibration.FLOOR:
        return [_clip((c - calibration.floor) / (1.0 - calibration.floor)) for c in cosines]
    low, high = min(cosines), max(cosines)
    if high - low < FLAT_RANGE:
        return [_clip(c) for c in cosines]
    return [(c - low) / (high - low) for c in cosines]


def keyword_scores(raw: Sequence[float]) -> list[float]:
    """The keyword score over the best among the candidates; 0 without a keyword hit."""
    best = max(raw, default=0.0)
    if best <= 0.0:
        return [0.0] * len(raw)
    return [max(0.0, b) / best for b in raw]


def _weighted(components: tuple[float, float, float, float], w: Weights) -> float:
    rec, imp, rel, kw = components
    return w.recency * rec + w.importance * imp + w.relevance * rel + w.keyword * kw


def _ranks(values: Sequence[float], present: Callable[[int], bool], ids: Sequence[str]) -> list[int | None]:
    """1-based rank of each value (higher is better, ties by id); None where the signal is absent."""
    order = sorted((i for i in range(len(values)) if present(i)), key=lambda i: (-values[i], ids[i]))
    ranks: list[int | None] = [None] * len(values)
    for rank, i in enumerate(order, start=1):
        ranks[i] = rank
    return ranks


def _rrf(columns: Sequence[Sequence[float]], w: Weights, has_query: bool, ids: Sequence[str]) -> list[float]:
    """Weighted reciprocal-rank fusion, scaled so a candidate first on every side scores 1."""
    weights = (w.recency, w.importance, w.relevance, w.keyword)
    present: list[Callable[[int], bool]] = [
        lambda _i: True,
        lambda _i: True,
        lambda _i: has_query,
        lambda i: columns[3][i] > 0.0,
    ]
    ranks = [_ranks(col, p, ids) for col, p in zip(columns, present, strict=True)]
    best = sum(weights) / (RRF_K + 1) or 1.0
    n = len(columns[0])
    return [
        sum(wt / (RRF_K + rk) for wt, r in zip(weights, ranks, strict=True) if (rk := r[i]) is not None) / best
        for i in range(n)
    ]


def rank(
    candidates: Sequence[Candidate], query: SearchQuery, calibration: RelevanceCalibration = DEFAULT_CALIBRATION
) -> list[ScoredMemory]:
    """Score every candidate and return the best ``query.limit``, best first."""
    has_query = query.embedding is not None
    rec = [recency_score(c.memory.valid_at, query.now, query.recency_days) for c in candidates]
    imp = [importance_score(c.memory.importance) for c in candidates]
    rel = relevance_scores([c.cosine for c in candidates], has_query, calibration)
    kw = keyword_scores([c.keyword for c in candidates])
    if query.fusion is Fusion.RRF:
        final = _rrf((rec, imp, rel, kw), query.weights, has_query, [str(c.memory.id) for c in candidates])
    else:
        final = [_weighted(parts, query.weights) for parts in zip(rec, imp, rel, kw, strict=True)]
    scored = [
        ScoredMemory(c.memory, Scores(rec[i], imp[i], rel[i], kw[i], final[i]))
        for i, c in enumerate(candidates)
    ]
    scored.sort(key=lambda s: (-s.scores.final, -s.memory.valid_at.timestamp(), str(s.memory.id)))
    return scored[: query.limit]
