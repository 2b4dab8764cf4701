"""The latent-terms emulation re-ranks as it says: min-max scaling, the period's memories first, real features."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from uuid import uuid4

import numpy as np
from npc_memory.domain.model import ScoredMemory, Scores
from test_edit_rules import memory

from benchmarks.conversation.latent import Latent, diverse, dot, reranked, scaled


def _hit(final: float, day: int) -> ScoredMemory:
    return ScoredMemory(replace(memory(), id=uuid4(), valid_at=datetime(2025, 1, day, tzinfo=UTC)),
                        Scores(0.0, 0.0, 0.0, 0.0, final))


def test_scaling_is_min_max_and_flat_lists_add_nothing() -> None:
    assert scaled([2.0, 4.0, 3.0]).tolist() == [0.0, 1.0, 0.5]
    assert scaled([1.5, 1.5]).tolist() == [0.0, 0.0]
    assert dot({1: 2.0, 5: 1.0}, {5: 3.0, 7: 9.0}) == 3.0


def test_the_score_reorders_but_the_period_stays_first() -> None:
    hits = [_hit(0.9, 1), _hit(0.5, 2), _hit(0.1, 3)]
    ids = [h.memory.id for h in hits]
    assert reranked(hits, np.array([0.9, 0.5, 0.1])) == ids
    assert reranked(hits, np.array([0.9, 0.5, 0.1]) + np.array([0.0, 0.0, 1.0])) == [ids[2], ids[0], ids[1]]
    in_january_2nd = datetime(2025, 1, 2, tzinfo=UTC)
    first = reranked(hits, np.array([0.9, 0.5, 0.1]), lambda h: h.memory.valid_at == in_january_2nd)
    assert first == [ids[1], ids[0], ids[2]]


def test_the_bundled_head_scores_a_paraphrase_above_an_unrelated_line() -> None:
    latent = Latent()
    asked = latent("What did I say about my sister's wedding?")
    assert dot(asked, latent("My sister gets married next spring")) > dot(asked, latent("The pigeons ate bread"))


def test_diversity_passes_over_a_near_copy_of_a_hit_already_taken() -> None:
    hits = [_hit(0.9, 1), _hit(0.85, 2), _hit(0.5, 3)]
    ids = [h.memory.id for h in hits]
    copy, other = np.array([1.0, 0.0], dtype=np.float32), np.array([0.0, 1.0], dtype=np.float32)
    vectors = [copy, copy, other]
    assert diverse(hits, vectors, 1.0, lambda _: False) == ids
    assert diverse(hits, vectors, 0.7, lambda _: False) == [ids[0], ids[2], ids[1]]
