"""The values the client hands back and takes in: enums, scopes, memories, scores, search filters.

They mirror the service's model field for field (tests/clients/test_client_api.py holds them equal), but belong to
the client, so a game tool needs nothing of the server to use them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any
from uuid import UUID


class Visibility(StrEnum):
    """Who may see a memory: the heroine who heard it (its scope), or every heroine of the player when asked.

    A shared memory shown to another heroine keeps its own scope: ``memory.scope.heroine_id`` names who heard it.
    """

    PRIVATE = "private"
    SHARED = "shared"


class Speaker(StrEnum):
    """Who said it."""

    USER = "user"
    HEROINE = "heroine"


class Subject(StrEnum):
    """What the fact is about."""

    USER = "user"
    HEROINE = "heroine"
    WORLD = "world"


class ContentType(StrEnum):
    """The kind of fact."""

    FACT = "fact"
    PREFERENCE = "preference"
    TRAIT = "trait"
    EVENT = "event"
    OPINION = "opinion"
    PERSONAL = "personal"
    RELATIONSHIP = "relationship"


class Tier(StrEnum):
    """How distilled a memory is: a gist, understood knowledge, or the raw source."""

    GIST = "gist"
    KNOWLEDGE = "knowledge"
    SOURCE = "source"


class CloseReason(StrEnum):
    """Why a row stopped being valid."""

    SUPERSEDED = "superseded"
    INVALIDATED = "invalidated"
    RETIRED = "retired"


class Fusion(StrEnum):
    """How component scores combine into the final score."""

    WEIGHTED = "weighted"
    RRF = "rrf"


class StoreOutcome(StrEnum):
    """What happened to one stored fact."""

    CREATED = "created"
    SUPERSEDED = "superseded"
    DUPLICATE = "duplicate"
    HISTORICAL = "historical"


@dataclass(frozen=True)
class Scope:
    """One player with one heroine: the unit of isolation."""

    user_id: str
    heroine_id: str


@dataclass(frozen=True)
class Weights:
    """Weights of the four score components."""

    recency: float = 0.10
    importance: float = 0.15
    relevance: float = 0.60
    keyword: float = 0.15


@dataclass(frozen=True)
class MemoryFilter:
    """Restrictions on the memories a search or listing considers; empty means any."""

    speakers: tuple[Speaker, ...] = ()
    subjects: tuple[Subject, ...] = ()
    subject_ids: tuple[str, ...] = ()
    content_types: tuple[ContentType, ...] = ()
    min_importance: int = 0
    tiers: tuple[Tier, ...] = ()
    slot: str | None = None


@dataclass(frozen=True)
class TurnPlace:
    """Where a dialogue turn was said: its dialogue (the game's id), its position there from 0, the speaker's name."""

    dialogue_id: str
    position: int
    speaker_name: str = ""


@dataclass(frozen=True)
class Memory:
    """One stored bi-temporal row."""

    id: UUID
    scope: Scope
    speaker: Speaker
    subject: Subject
    subject_id: str
    content_type: ContentType
    content: str
    importance: int
    tier: Tier
    slot: str | None
    metadata: dict[str, Any]
    valid_at: datetime
    invalid_at: datetime | None
    created_at: datetime
    updated_at: datetime
    superseded_by: UUID | None
    close_reason: CloseReason | None
    embedding_model: str
    timeline_id: int = 1
    visibility: Visibility = Visibility.PRIVATE
    place: TurnPlace | None = None
    """For a turn stored by ``store_dialogue``: its dialogue and position."""
    valid_game_day: float | None = None
    """``valid_at`` on the game's calendar, when the service has a game clock."""
    invalid_game_day: float | None = None
    """``invalid_at`` on the game's calendar, when closed and the service has a game clock."""


@dataclass(frozen=True)
class StoreResult:
    """The outcome for one fact of a store request."""

    memory_id: UUID
    outcome: StoreOutcome
    superseded_ids: tuple[UUID, ...] = ()


@dataclass(frozen=True)
class Scores:
    """The four components, each in [0, 1], and the final score."""

    recency: float
    importance: float
    relevance: float
    keyword: float
    final: float


@dataclass(frozen=True)
class ScoredMemory:
    """A search hit with the scores that ranked it."""

    memory: Memory
    scores: Scores
    cosine: float = 0.0
    """The raw cosine to the query (0 without a query vector): what a deepen search compares."""
    via_memory_id: UUID | None = None
    """The memory this one was reached from through a link; None for a ranked result."""
    hops: int = 0


class LinkKind(StrEnum):
    """How two memories are linked."""

    RELATED_TO = "related_to"
    DERIVED_FROM = "derived_from"


@dataclass(frozen=True)
class Link:
    """One link of a scope: ``from_id`` → ``to_id``; depth 0 when the game named it."""

    from_id: UUID
    to_id: UUID
    kind: LinkKind
    depth: int = 0
    via: str = ""
    discovered_at: datetime | None = None


@dataclass(frozen=True)
class Expansion:
    """What one ExpandMemory call did: the depth it reached, the links it made, the linked total."""

    memory_id: UUID
    depth: int
    found: list[tuple[Link, Memory]]
    total_linked: int


@dataclass(frozen=True)
class LinkView:
    """A memory's links by role."""

    parents: list[Link]
    children: list[Link]
    related: list[Link]


@dataclass(frozen=True)
class SavePoint:
    """A save slot: the player's timeline and the system time it was saved at."""

    save_id: str
    timeline_id: int
    saved_at: datetime


@dataclass(frozen=True)
class Timeline:
    """One of a player's timelines: the root (no parent) or a branch made by loading a save point."""

    timeline_id: int
    parent_id: int | None
    branched_at: datetime | None
    save_id: str
    live: bool


@dataclass(frozen=True)
class SaveState:
    """A player's save points, timelines and live timeline."""

    save_points: list[SavePoint]
    timelines: list[Timeline]
    live_timeline_id: int
