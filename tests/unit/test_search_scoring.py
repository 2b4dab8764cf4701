"""The Python reference of the score: calibration of relevance, keyword normalisation, recency and ranking order."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from benchmarks.reference_scoring import (
    Calibration,
    RelevanceCalibration,
    keyword_scores,
    recency_score,
    relevance_scores,
)

E5_LIKE = [0.78, 0.81, 0.86, 0.90]


def test_min_max_spreads_bunched_cosines_over_zero_to_one() -> None:
    """e5 cosines bunched in 0.78-0.90 become 0..1, order kept (the default calibration)."""
    assert relevance_scores(E5_LIKE, True) == pytest.approx([0.0, 0.25, 0.6666667, 1.0])


def test_raw_calibration_only_clips() -> None:
    """RAW keeps the cosine, clipped to [0, 1]."""
    assert relevance_scores([-0.2, 0.5, 1.2], True, RelevanceCalibration(Calibration.RAW)) == [0.0, 0.5, 1.0]


def test_floor_calibration_maps_the_floor_to_zero_and_one_to_one() -> None:
    """FLOOR is (c - floor) / (1 - floor), clipped below the floor."""
    cal = RelevanceCalibration(Calibration.FLOOR, 0.8)
    assert relevance_scores([0.7, 0.8, 0.9, 1.0], True, cal) == pytest.approx([0.0, 0.0, 0.5, 1.0])


def test_min_max_with_equal_cosines_keeps_the_clipped_cosine() -> None:
    """One candidate (or a flat set) cannot be stretched: its cosine stands."""
    assert relevance_scores([0.83], True) == [0.83]
    assert relevance_scores([0.8, 0.8], True) == [0.8, 0.8]


def test_no_query_vector_means_zero_relevance() -> None:
    """Without a query embedding meaning cannot count."""
    assert relevance_scores(E5_LIKE, False) == [0.0] * 4


def test_keyword_is_bm25_over_the_best_and_zero_without_a_hit() -> None:
    """The best keyword hit scores 1, others proportionally, non-hits 0; no hit at all gives zeros."""
    assert keyword_scores([0.0, 2.0, 4.0]) == [0.0, 0.5, 1.0]
    assert keyword_scores([0.0, 0.0]) == [0.0, 0.0]


def test_recency_halves_in_a_year_and_never_exceeds_one() -> None:
    """exp(-age/τ) with the default half-life of 365 days: 1 at age 0 or in the future, 1/2 at a year."""
    now = datetime(2025, 5, 1, tzinfo=UTC)
    assert recency_score(now, now) == 1.0
    assert recency_score(now + timedelta(days=3), now) == 1.0
    assert recency_score(now - timedelta(days=365), now) == pytest.approx(0.5)


def test_recency_of_a_fact_from_year_one_is_tiny_but_positive() -> None:
    """The exponent is capped as in SQL: ten thousand years of age give exp(-700), not an underflow to 0."""
    first, last = datetime(1, 1, 1, tzinfo=UTC), datetime(9999, 12, 31, tzinfo=UTC)
    assert recency_score(first, last) == math.exp(-700)
    assert recency_score(last, first) == 1.0
