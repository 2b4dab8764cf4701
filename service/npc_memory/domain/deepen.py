"""Deepening (seed of the tiers): when to go from gists to knowledge to sources, and what the answer is.

Relevance here is the raw cosine to the query: the calibrated relevance is min-max scaled over one search's
candidates, so its best is always 1 and cannot say whether a tier answered at all.
"""

from __future__ import annotations

from collections.abc import Sequence

from npc_memory.domain.model import ScoredMemory, Tier

DEEPEN_ORDER = (Tier.GIST, Tier.KNOWLEDGE, Tier.SOURCE)
"""Gists first, the raw sources last."""


def deepen_tiers(allowed: Sequence[Tier]) -> tuple[Tier, ...]:
    """The tiers a deepen search goes through, in order; a tier filter narrows them."""
    return tuple(t for t in DEEPEN_ORDER if not allowed or t in allowed)


def passing(hits: Sequence[ScoredMemory], threshold: float) -> list[ScoredMemory]:
    """The hits whose raw cosine reaches the threshold."""
    return [h for h in hits if h.cosine >= threshold]


def enough_passed(
    earlier: Sequence[ScoredMemory], hits: Sequence[ScoredMemory], threshold: float, limit: int
) -> bool:
    """Whether the tiers searched so far answer: at least ``limit`` results reach the threshold."""
    return len(earlier) + len(passing(hits, threshold)) >= limit


def deepen_answer(earlier: Sequence[ScoredMemory], hits: Sequence[ScoredMemory], limit: int) -> list[ScoredMemory]:
    """What passed in shallower tiers, then the last tier's results in rank order, at most ``limit``."""
    seen = {h.memory.id for h in earlier}
    return [*earlier, *(h for h in hits if h.memory.id not in seen)][:limit]
