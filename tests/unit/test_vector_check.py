"""api/validation.py Checker.vector: a caller's vector is refused with the reason, or normalised as numpy would."""

from __future__ import annotations

import math

import numpy as np
import pytest
from npc_memory.api.validation import Checker

DIM = 8


@pytest.mark.parametrize(("values", "reason"), [
    ([math.nan] + [0.1] * (DIM - 1), "contains NaN or infinity"),
    ([0.1] * (DIM - 1) + [math.inf], "contains NaN or infinity"),
    ([-math.inf] + [0.0] * (DIM - 1), "contains NaN or infinity"),
    ([0.0] * DIM, "is all zeros"),
    ([0.1] * (DIM + 1), f"has {DIM + 1} values; this server's embeddings have {DIM}"),
], ids=["nan", "inf", "-inf", "zeros", "size"])
def test_a_bad_vector_is_refused_with_its_reason(values: list[float], reason: str) -> None:
    c = Checker()
    assert c.vector("query_embedding", values, DIM) is None
    assert [(v.field, v.description) for v in c.violations] == [("query_embedding", reason)]


def test_a_vector_is_normalised_as_numpy_norm_would() -> None:
    """The same floats as dividing by np.linalg.norm in float64; huge values do not overflow to zeros."""
    rng = np.random.default_rng(1)
    for values in [*(rng.standard_normal(DIM).astype(np.float32) for _ in range(50)),
                   np.full(DIM, 1e20, dtype=np.float32), np.full(DIM, 3e38, dtype=np.float32)]:
        c = Checker()
        got = c.vector("query_embedding", values.tolist(), DIM)
        wide = values.astype(np.float64)
        assert got is not None
        assert not c.violations
        assert got.dtype == np.float32
        assert np.array_equal(got, (wide / np.linalg.norm(wide)).astype(np.float32))
