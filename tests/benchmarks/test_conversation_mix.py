"""The learned-mix benchmark ranks as the service does: repeated lines shown once, the period's memories first."""

from __future__ import annotations

from uuid import uuid4

import numpy as np

from benchmarks.conversation.mix import Question, recall, simplex


def _question(keys: list[str] | None, first: list[float], evidence_at: int) -> Question:
    # relevance (third component) orders the three candidates 0 > 1 > 2; every other component is 0
    features = np.zeros((3, 6))
    features[:, 2] = [0.9, 0.8, 0.1]
    ids = [uuid4() for _ in range(3)]
    return Question(features, np.array(first), np.arange(3, dtype=float), keys, ids, [ids[evidence_at]], "g")


def test_a_repeated_line_shows_once_so_the_next_line_moves_up() -> None:
    relevance_only = np.array([[0.0, 0.0, 1.0, 0.0]])
    collapsed = _question(["same", "same", "other"], [0.0, 0.0, 0.0], evidence_at=2)
    kept = _question(None, [0.0, 0.0, 0.0], evidence_at=2)
    assert recall([collapsed], relevance_only, 2)[0, 0] == 1.0
    assert recall([kept], relevance_only, 2)[0, 0] == 0.0
    hidden_copy = _question(["same", "same", "other"], [0.0, 0.0, 0.0], evidence_at=1)
    assert recall([hidden_copy], relevance_only, 3)[0, 0] == 0.0  # the worse copy is never shown


def test_the_period_named_ranks_first_and_weights_reorder() -> None:
    weights = np.array([[0.0, 0.0, 1.0, 0.0], [1.0, 0.0, 0.0, 0.0]])
    in_period = _question(None, [0.0, 0.0, 1.0], evidence_at=2)
    assert recall([in_period], weights, 1)[0].tolist() == [1.0, 1.0]
    plain = _question(None, [0.0, 0.0, 0.0], evidence_at=1)
    # relevance puts it second; with only recency (all 0) the tie order (0, 1, 2) does too
    assert recall([plain], weights, 1)[0].tolist() == [0.0, 0.0]
    assert recall([plain], weights, 2)[0].tolist() == [1.0, 1.0]


def test_the_grid_covers_the_simplex() -> None:
    grid = simplex(4, 0.5)
    assert len(grid) == 10
    assert np.allclose(grid.sum(axis=1), 1.0)
    assert {tuple(r) for r in grid} >= {(1.0, 0.0, 0.0, 0.0), (0.5, 0.0, 0.5, 0.0)}
