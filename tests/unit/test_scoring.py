"""THE scoring function (domain/scoring.py) against an independent reference (tests/score_reference.py).

Random candidate sets, built to tie (shared dates, importances, cosines and keyword scores), under every fusion,
with and without a vector, keyword hits or a period ranked first: the same hits in the same order, every
component and final score equal to 1e-12. Then the edges the formula states.
"""

from __future__ import annotations

import math
import random
import uuid
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
import score_reference
from npc_memory.domain import scoring
from npc_memory.domain.model import TURN_WEIGHTS, Fusion, Scope, SearchQuery, Weights

NOW = datetime(2026, 3, 1, tzinfo=UTC)
LOW_BITS = (1 << 64) - 1
VECTOR = np.ones(1, dtype=np.float32)
"""A query vector (the scoring function only asks whether there is one)."""


def columns(rows: list[score_reference.Row]) -> scoring.Gathered:
    """The rows as the scoring function's columns."""
    return scoring.Gathered(
        cosine=np.array([r.cosine for r in rows]), keyword=np.array([r.keyword for r in rows]),
        valid_at=np.array([r.valid_at.timestamp() for r in rows]),
        importance=np.array([float(r.importance) for r in rows]),
        id_high=np.array([r.id.int >> 64 for r in rows], dtype=np.uint64),
        id_low=np.array([r.id.int & LOW_BITS for r in rows], dtype=np.uint64),
        turn=np.array([r.turn for r in rows], dtype=np.bool_),
    )


def random_rows(rng: random.Random, n: int, keyword_hits: bool) -> list[score_reference.Row]:
    """``n`` candidates drawing from small pools, so many share a date, an importance, a cosine or a keyword score."""
    dates = [NOW - timedelta(days=rng.choice([0, 1, 3, 30, 400]), seconds=rng.choice([0, 7])) for _ in range(4)]
    dates.append(NOW + timedelta(days=2))  # dated after now: brand new
    cosines = [round(rng.uniform(0.7, 0.92), 3) for _ in range(6)]
    scores = [0.0, 0.0, 1.5, 3.25, rng.uniform(0.1, 5.0)] if keyword_hits else [0.0]
    return [score_reference.Row(uuid.UUID(int=rng.getrandbits(128)), rng.choice(dates), rng.choice([1, 5, 5, 8, 10]),
                                rng.choice(cosines), rng.choice(scores), rng.random() < 0.4) for _ in range(n)]


CASES = [(fusion, vector, hits, period)
         for fusion in (Fusion.WEIGHTED, Fusion.RRF) for vector in (True, False) for hits in (True, False)
         for period in (False, True)]


@pytest.mark.parametrize(("fusion", "vector", "keyword_hits", "period_first"), CASES)
def test_the_scoring_function_ranks_as_the_independent_reference(
    fusion: Fusion, vector: bool, keyword_hits: bool, period_first: bool
) -> None:
    """100 random candidate sets of 1 to 160 rows: equal order, equal scores."""
    rng = random.Random(CASES.index((fusion, vector, keyword_hits, period_first)))
    for _ in range(100):
        rows = random_rows(rng, rng.randint(1, 160), keyword_hits)
        weights = rng.choice([Weights(), Weights(0.6, 0.3, 0.1, 0.0), Weights(0.25, 0.25, 0.25, 0.25),
                              Weights(0.0, 0.0, 1.0, 0.0)])
        query = SearchQuery(Scope("p", "letia"), "q", rng.choice([1, 5, 10, 100]), weights, NOW, fusion=fusion,
                            embedding=VECTOR if vector else None,
                            recency_days=rng.choice([scoring.RECENCY_DAYS, 30.0]),
                            period=(NOW - timedelta(days=31), NOW) if period_first else None,
                            period_first=period_first,
                            turn_weights=rng.choice([None, TURN_WEIGHTS, Weights(0.0, 0.0, 0.2, 0.8)]))
        expected = score_reference.rank(rows, query)
        ranked = scoring.rank(columns(rows), query)
        assert [rows[i].id for i in ranked.positions.tolist()] == [e.id for e in expected]
        for got, want in zip(ranked.scores(), expected, strict=True):
            for part in ("recency", "importance", "relevance", "keyword", "final"):
                assert getattr(got, part) == pytest.approx(getattr(want, part), abs=1e-12), part


def test_min_max_spreads_bunched_cosines_over_zero_to_one() -> None:
    """e5 cosines bunched in 0.78-0.90 become 0..1, order kept."""
    got = scoring.relevance(np.array([0.78, 0.81, 0.86, 0.90]), True)
    assert got.tolist() == pytest.approx([0.0, 0.25, 0.6666667, 1.0])


def test_flat_cosines_keep_the_clipped_cosine_and_no_vector_gives_zero() -> None:
    """One candidate (or a flat set) cannot be stretched; without a query vector meaning cannot count."""
    assert scoring.relevance(np.array([0.83]), True).tolist() == [0.83]
    assert scoring.relevance(np.array([1.2, 1.2]), True).tolist() == [1.0, 1.0]
    assert scoring.relevance(np.array([0.8, 0.9]), False).tolist() == [0.0, 0.0]


def test_keyword_is_the_raw_score_over_the_best_and_zero_without_a_hit() -> None:
    """The best keyword hit scores 1, others proportionally, non-hits 0; no hit at all gives zeros."""
    assert scoring.keyword(np.array([0.0, 2.0, 4.0])).tolist() == [0.0, 0.5, 1.0]
    assert scoring.keyword(np.array([0.0, 0.0])).tolist() == [0.0, 0.0]


def test_recency_halves_in_a_year_and_an_old_fact_stays_positive() -> None:
    """1 at age 0 or in the future, 1/2 at the half-life; ten thousand years give exp(-700), not 0."""
    now = NOW.timestamp()
    ages = np.array([now, now + 3 * 86_400, now - 365 * 86_400, datetime(1, 1, 1, tzinfo=UTC).timestamp()])
    got = scoring.recency(ages, now, scoring.RECENCY_DAYS).tolist()
    assert got[:3] == pytest.approx([1.0, 1.0, 0.5])
    assert got[3] == math.exp(-700)


def test_reached_rows_score_on_the_clipped_cosine_without_keyword() -> None:
    """Rows reached by links: relevance is the raw cosine clipped, keyword 0, ordered by that weighted sum."""
    rows = [score_reference.Row(uuid.UUID(int=i), NOW, 5, cos, 7.0) for i, cos in enumerate([0.2, 1.3, 0.5])]
    query = SearchQuery(Scope("p", "letia"), "q", 10, Weights(), NOW, embedding=VECTOR)
    ranked = scoring.reached(columns(rows), query)
    assert ranked.positions.tolist() == [1, 2, 0]
    assert ranked.relevance.tolist() == [1.0, 0.5, 0.2]
    assert ranked.keyword.tolist() == [0.0, 0.0, 0.0]
