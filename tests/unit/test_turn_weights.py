"""A stated dialogue's turns (tier source) take their own weights where the service's defaults apply (scoring.rank).

The tier chooses: the same signals score a turn with ``SearchQuery.turn_weights`` and a fact with ``weights``;
weights a request or a heroine's settings give weigh every memory.
"""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
from npc_memory.config import SearchConfig
from npc_memory.domain import scoring
from npc_memory.domain.model import TURN_WEIGHTS, Scope, SearchQuery, Weights

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def _gathered(turn: list[bool]) -> scoring.Gathered:
    n = len(turn)
    return scoring.Gathered(
        cosine=np.array([0.9, 0.8, 0.9, 0.8][:n]), keyword=np.array([0.0, 2.0, 0.0, 2.0][:n]),
        valid_at=np.full(n, NOW.timestamp()), importance=np.full(n, 5.0),
        id_high=np.arange(n, dtype=np.uint64), id_low=np.zeros(n, dtype=np.uint64), turn=np.array(turn))


def _final(weights: Weights, relevance: float, keyword: float) -> float:
    return weights.recency * 1.0 + weights.importance * 0.5 + weights.relevance * relevance + weights.keyword * keyword


def test_turns_take_the_turn_weights_and_facts_the_others() -> None:
    """Rows 0-1 facts, 2-3 turns with the same signals: each scored by its own tier's weights."""
    turns = Weights(0.0, 0.0, 0.2, 0.8)
    query = SearchQuery(scope=Scope("p", "letia"), text="x", limit=4, weights=Weights(), now=NOW,
                        embedding=np.zeros(4, dtype=np.float32), turn_weights=turns)
    ranked = scoring.rank(_gathered([False, False, True, True]), query)
    final = dict(zip(ranked.positions.tolist(), ranked.final.tolist(), strict=True))
    assert abs(final[0] - _final(Weights(), 1.0, 0.0)) < 1e-12
    assert abs(final[1] - _final(Weights(), 0.0, 1.0)) < 1e-12
    assert abs(final[2] - _final(turns, 1.0, 0.0)) < 1e-12
    assert abs(final[3] - _final(turns, 0.0, 1.0)) < 1e-12
    # Keyword-heavy turn weights put the keyword match first among the turns; the facts keep meaning first.
    assert final[3] > final[2]
    assert final[0] > final[1]
    # Without turn weights every row is scored alike.
    plain = scoring.rank(_gathered([False, False, True, True]), SearchQuery(
        scope=Scope("p", "letia"), text="x", limit=4, weights=Weights(), now=NOW, embedding=np.zeros(4, np.float32)))
    same = dict(zip(plain.positions.tolist(), plain.final.tolist(), strict=True))
    assert same[0] == same[2]
    assert same[1] == same[3]


def test_configured_weights_weigh_every_memory() -> None:
    """The defaults give turns their weights; a heroine's or the server's configured weights weigh turns too."""
    assert SearchConfig().turn_weights_for("letia") == TURN_WEIGHTS
    assert SearchConfig(heroine_weights={"letia": Weights(0.1, 0.1, 0.4, 0.4)}).turn_weights_for("letia") is None
    assert SearchConfig(heroine_weights={"letia": Weights(0.1, 0.1, 0.4, 0.4)}).turn_weights_for("mara") == (
        TURN_WEIGHTS)
    assert SearchConfig(default_weights=Weights(0.2, 0.2, 0.4, 0.2)).turn_weights_for("letia") is None
