"""Answers spread across conversations: at most a few hits of one session in a page while other sessions wait.

A question like "every place I went" has its answers in several sessions months apart. With context vectors
a good turn pulls its neighbours up with it (the turn after it is embedded over it), so the first page fills
with one session's lines while the other sessions' answers sit just below. A session here is a run of hits
said at most the dialogue window apart (``valid_at``; a session stored in one request shares one date).
``python -m benchmarks.conversation.run`` measures it (docs/conversation-benchmark.md, third round).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from itertools import pairwise

from npc_memory.domain.model import ScoredMemory

SPREAD_HEADROOM = 3
"""Search asks the store for this many times ``limit`` hits when sessions are capped: the waiting ones fill in."""


def session_keys(hits: Sequence[ScoredMemory], window: timedelta) -> list[int]:
    """A session number per hit: hits whose ``valid_at`` chain within ``window`` of each other share one."""
    order = sorted(range(len(hits)), key=lambda i: hits[i].memory.valid_at)
    keys = [0] * len(hits)
    session = 0
    for a, b in pairwise(order):
        if hits[b].memory.valid_at - hits[a].memory.valid_at > window:
            session += 1
        keys[b] = session
    return keys


def spread_sessions(hits: Sequence[ScoredMemory], limit: int, cap: int, window: timedelta) -> list[ScoredMemory]:
    """The hits in rank order, a session's hits past its first ``cap`` moved behind the others; cut to ``limit``.

    Nothing is dropped: a page with too few other sessions is filled with the waiting hits in rank order.
    ``cap`` 0 keeps the order as given.
    """
    if cap <= 0:
        return list(hits[:limit])
    seen: dict[int, int] = {}
    first: list[ScoredMemory] = []
    waiting: list[ScoredMemory] = []
    for hit, key in zip(hits, session_keys(hits, window), strict=True):
        seen[key] = seen.get(key, 0) + 1
        (first if seen[key] <= cap else waiting).append(hit)
    return (first + waiting)[:limit]
