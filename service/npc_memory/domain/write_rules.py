"""Write rules as pure functions: what counts as the same text, and where a fact goes in its slot's timeline."""

from __future__ import annotations

import functools
import hashlib
import json
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from uuid import UUID

from npc_memory.domain.model import NewMemory, Visibility

_SPACE = re.compile(r"\s+")
_EDGE_PUNCT = re.compile(r"^[\W_]+|[\W_]+$")


def _content_key(content: str) -> str:
    text = unicodedata.normalize("NFKC", content).casefold()
    text = _SPACE.sub(" ", text).strip()
    return _EDGE_PUNCT.sub("", text)


# Search collapses repeated turns by this key for every hit it considers (dialogue.distinct_turns), the same rows'
# texts request after request: normalising them again was ~3% of the server's CPU under a search load (py-spy).
# Lines of dialogue are short; long facts are not kept, so the cache holds at most ~8 MB.
_short_key = functools.lru_cache(maxsize=8192)(_content_key)
_SHORT = 200


def content_key(content: str) -> str:
    """The content with width, case, spacing and edge punctuation normalised: repeats compare equal."""
    return _short_key(content) if len(content) <= _SHORT else _content_key(content)


@dataclass(frozen=True)
class SlotRow:
    """A row of a slot's timeline: still valid, or closed by a newer version."""

    id: UUID
    valid_at: datetime
    invalid_at: datetime | None


@dataclass(frozen=True)
class SlotPlacement:
    """Where a new fact goes among the versions of its slot."""

    close: SlotRow | None
    """The version the new fact ends (its ``invalid_at`` becomes the new ``valid_at``)."""
    successor: SlotRow | None
    """A newer version: the new fact is history, closed at the successor's ``valid_at``."""


def place_in_slot(rows: list[SlotRow], valid_at: datetime) -> SlotPlacement:
    """Insert a fact valid from ``valid_at`` into a slot's timeline without closing anything newer.

    The version in force at ``valid_at`` is ended there; a version that starts later stays in force and
    the new fact becomes the history before it (a back-dated fact never closes a newer one).
    """
    earlier = [r for r in rows if r.valid_at <= valid_at]
    later = [r for r in rows if r.valid_at > valid_at]
    prev = max(earlier, key=lambda r: (r.valid_at, str(r.id)), default=None)
    successor = min(later, key=lambda r: (r.valid_at, str(r.id)), default=None)
    if prev is not None and prev.invalid_at is not None and prev.invalid_at <= valid_at:
        prev = None  # it had already ended before this fact began
    return SlotPlacement(close=prev, successor=successor)


@dataclass(frozen=True)
class FactText:
    """What the duplicate rule compares besides meaning: the normalised text, the terms and the signature."""

    key: str
    terms: tuple[str, ...]
    """In order: "레티아가 로코를 좋아함" and "로코가 레티아를 좋아함" have the same set of terms (cosine 0.99)."""
    meaning: tuple[str, ...] | None
    """The meaning signature (text/meaning.py); None for a row stored before signatures were kept."""

    @classmethod
    def of(cls, content: str, terms: Sequence[str], meaning: Sequence[str] | None) -> FactText:
        """The comparable form of a fact's text, its BM25 terms and its meaning signature."""
        return cls(content_key(content), tuple(terms), tuple(meaning) if meaning is not None else None)


def is_duplicate(new: FactText, old: FactText, cosine: float, threshold: float) -> bool:
    """Same normalised text; or cosine at or above ``threshold`` with the same ordered terms and signature.

    Cosine alone is not enough for Korean with multilingual-e5: "고양이를 좋아함" and "고양이를 싫어함" score
    0.96, "생일은 3월 5일" and "생일은 3월 6일" 0.98, a swap of who does what to whom 0.99, "대구에 산다" and
    "대구에 살고 싶어한다" 0.97 (docs/decisions/duplicate-rule.md). The ordered terms catch a
    different object, verb, number or role; the signature catches what the terms drop: negation, tense,
    auxiliaries, adverbs of frequency and degree, counts. A row without a signature only matches its own text:
    merging on less would risk dropping a different fact, and keeping a repeat only costs a row.
    """
    if new.key == old.key:
        return True
    if cosine < threshold or not new.terms or new.meaning is None or old.meaning is None:
        return False
    return new.terms == old.terms and new.meaning == old.meaning


SAME_TURN = timedelta(seconds=60)
"""A dialogue turn sent again with the same text less than this after the stored one is the same utterance."""


def is_repeated_turn(new: FactText, new_at: datetime, old: FactText, old_at: datetime) -> bool:
    """A dialogue turn (tier source, or of a dialogue batch) is a duplicate only of itself: same text, same moment.

    Turns are the record of what was said: "ㅋㅋ 그러게" on another day, or "응, 지난 화요일에!" after another
    question, is another event with its own date and context (the conversation benchmark lost 11 evidence turns
    to the knowledge rule). Only a resend (a retry without request_id) is caught.
    """
    return new.key == old.key and abs(new_at - old_at) < SAME_TURN


def request_fingerprint(facts: Sequence[NewMemory]) -> str:
    """A hash of a store request's facts as the caller sent them: a reused request_id must name the same request."""
    digest = hashlib.sha256()
    for f in facts:
        digest.update(json.dumps([
            f.speaker.value, f.subject.value, f.subject_id, f.content_type.value, f.content, f.importance,
            f.tier.value, f.slot, [str(i) for i in f.supersedes], f.valid_at.isoformat() if f.valid_at else None,
            f.metadata,
        ], ensure_ascii=False, sort_keys=True, default=str).encode())
        digest.update(f.embedding.tobytes() if f.embedding is not None else b"-")
        if f.related or f.parents:  # only then, so keys recorded before links existed keep their fingerprint
            digest.update(json.dumps([[str(r) for r in f.related], [str(p) for p in f.parents]]).encode())
        if f.visibility is not Visibility.PRIVATE:  # only then, so keys recorded before sharing existed still match
            digest.update(f.visibility.value.encode())
    return digest.hexdigest()
