"""Dialogue turns: which memories are raw utterances, the text their vector is taken over, repeats in results.

A turn often means nothing alone ("응, 지난 화요일에!" answers "경주 언제 갔었어?"). A dialogue turn (tier
``source``, at most ``MAX_TURN_CHARS``) whose vector the service makes is embedded together with the turn
before it in the same scope, when that turn was said at most the context window earlier: the previous turn of
the same batch (a session stored in one request), or the scope's latest stored turn (one turn per request).
The stored content and keyword terms stay the line itself. Search shows a line said many times once
(``distinct_turns``): every turn is kept as its own event, but ten copies of "ㅋㅋ 그러게" are no answer.
``python -m benchmarks.conversation.run`` measures both (docs/conversation-benchmark.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from npc_memory.domain.model import NewMemory, ScoredMemory, Tier
from npc_memory.domain.write_rules import content_key

MAX_TURN_CHARS = 400
"""Longer source memories are documents, not turns: they carry their own context."""


@dataclass(frozen=True)
class StoredTurn:
    """The scope's latest stored dialogue turn before a batch's first turn."""

    content: str
    valid_at: datetime


def is_turn(fact: NewMemory) -> bool:
    """Whether ``fact`` is a dialogue turn: a raw utterance (tier source), short enough to need its neighbour."""
    return fact.tier is Tier.SOURCE and len(fact.content) <= MAX_TURN_CHARS


def first_turn_at(facts: Sequence[NewMemory], now: datetime) -> datetime | None:
    """When the batch's earliest dialogue turn was said (its predecessor may be stored).

    None when no turn needs a vector made here (a caller's vector is kept as given).
    """
    if not any(is_turn(f) and f.embedding is None for f in facts):
        return None
    return min(f.valid_at or now for f in facts if is_turn(f))


def with_previous(previous: str | None, content: str) -> str:
    """The text a turn's vector is taken over: the previous turn, a newline, the turn (or the turn alone)."""
    return f"{previous}\n{content}" if previous else content


def embedding_texts(
    facts: Sequence[NewMemory], now: datetime, window: timedelta, stored: StoredTurn | None,
) -> list[str]:
    """The text each fact's vector is taken over: a turn with its predecessor within ``window``, else the content.

    Turns are ordered by ``valid_at`` (the request's order among equal times); a turn said more than
    ``window`` after the one before it starts a new conversation and is embedded alone.
    """
    texts = [f.content for f in facts]
    if window <= timedelta(0):
        return texts
    order = sorted((i for i, f in enumerate(facts) if is_turn(f)), key=lambda i: (facts[i].valid_at or now, i))
    prev = stored
    for i in order:
        at = facts[i].valid_at or now
        if facts[i].embedding is None and prev is not None and timedelta(0) <= at - prev.valid_at <= window:
            texts[i] = with_previous(prev.content, facts[i].content)
        prev = StoredTurn(facts[i].content, at)
    return texts


REPEAT_HEADROOM = 2
"""Search asks the store for this many times ``limit`` hits when repeated turns are collapsed."""


def distinct_turns(hits: Sequence[ScoredMemory], limit: int) -> list[ScoredMemory]:
    """The hits in rank order without a dialogue turn whose text a better hit already said, cut to ``limit``.

    Only tier ``source`` rows collapse (knowledge never repeats: the duplicate rule merges it); the best-ranked
    copy stays, which with context vectors is the one said in the context that fits the question.
    """
    seen: set[str] = set()
    out: list[ScoredMemory] = []
    for hit in hits:
        if hit.memory.tier is Tier.SOURCE:
            key = content_key(hit.memory.content)
            if key in seen:
                continue
            seen.add(key)
        out.append(hit)
        if len(out) == limit:
            break
    return out
