"""Forgetting as a pure rule: which valid memories of a scope a retention policy retires."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from uuid import UUID


@dataclass(frozen=True)
class RetentionPolicy:
    """How many valid memories a scope keeps, and which it never gives up."""

    max_valid: int = 2000
    """Most valid memories kept per scope (player with heroine); 0 keeps everything."""
    importance_floor: int = 8
    """Memories at or above this importance are never retired, even over ``max_valid``."""


@dataclass(frozen=True)
class RetentionPolicies:
    """The policy of every heroine: a default and per-heroine exceptions."""

    default: RetentionPolicy = RetentionPolicy()
    """The policy of heroines without an entry below."""
    heroines: Mapping[str, RetentionPolicy] = field(default_factory=dict)
    """Per-heroine policies."""

    def policy_for(self, heroine_id: str) -> RetentionPolicy:
        """The policy of one heroine."""
        return self.heroines.get(heroine_id, self.default)

    def smallest_limit(self) -> int | None:
        """The lowest ``max_valid`` that retires anything; None when every policy keeps everything."""
        limits = [p.max_valid for p in (self.default, *self.heroines.values()) if p.max_valid > 0]
        return min(limits) if limits else None


@dataclass(frozen=True)
class RetentionRow:
    """What the rule needs to know of a valid memory."""

    id: UUID
    importance: int
    valid_at: datetime
    grounds: bool = False
    """A valid memory was distilled from it (DERIVED_FROM): it is never retired."""


def to_retire(rows: Sequence[RetentionRow], policy: RetentionPolicy) -> list[UUID]:
    """The memories to retire so that at most ``max_valid`` stay valid: least important first, then oldest.

    Memories at or above the importance floor, and memories a valid memory was distilled from, are kept, so
    a scope may stay over the limit when they alone exceed it. Ties on importance and age are broken by id, so
    the choice is deterministic.
    """
    excess = len(rows) - policy.max_valid
    if policy.max_valid <= 0 or excess <= 0:
        return []
    eligible = sorted(
        (r for r in rows if r.importance < policy.importance_floor and not r.grounds),
        key=lambda r: (r.importance, r.valid_at, str(r.id)),
    )
    return [r.id for r in eligible[:excess]]
