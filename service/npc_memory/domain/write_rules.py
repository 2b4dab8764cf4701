"""Write rules as pure functions: what counts as the same text, and where a fact goes in its slot's timeline."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

_SPACE = re.compile(r"\s+")
_EDGE_PUNCT = re.compile(r"^[\W_]+|[\W_]+$")


def content_key(content: str) -> str:
    """The content with width, case, spacing and edge punctuation normalised: repeats compare equal."""
    text = unicodedata.normalize("NFKC", content).casefold()
    text = _SPACE.sub(" ", text).strip()
    return _EDGE_PUNCT.sub("", text)


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
