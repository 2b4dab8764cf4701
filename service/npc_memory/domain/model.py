"""The memory model: scopes, facts, bi-temporal rows and search requests as plain values."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any
from uuid import UUID

import numpy as np
import numpy.typing as npt

from npc_memory.domain.score_constants import RECENCY_DAYS

Vector = npt.NDArray[np.float32]

MemoryRef = UUID | int
"""A memory a fact names: a stored memory's id, or the position of another fact of the same batch."""

DEFAULT_IMPORTANCE = 5
USER_SUBJECT_ID = "user"
WORLD_SUBJECT_ID = "world"


class Visibility(StrEnum):
    """Who may see a memory: the heroine who heard it, or every heroine of the player (when a read asks)."""

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
    """How distilled a memory is: a gist (a word or summary), understood knowledge (may be revised), the raw source."""

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

    # 0.10 / 0.15 / 0.60 / 0.15 (was 0.15 / 0.15 / 0.50 / 0.20): conversation benchmark R@10 0.428 -> 0.446 with
    # the Korean fact set's R@5 0.948 -> 0.951 (docs/decisions/fusion-and-weights.md).
    recency: float = 0.10
    importance: float = 0.15
    relevance: float = 0.60
    keyword: float = 0.15


TURN_WEIGHTS = Weights(0.0, 0.0, 0.85, 0.15)
"""The default weights of a stated dialogue's turns (tier source): meaning and words only, the keyword weight the
facts' own. A said line has no importance of its own, and in a long relationship what was said long ago is asked
about as often as yesterday's (docs/decisions/turn-weights.md); facts keep ``Weights()``."""


@dataclass(frozen=True)
class TurnPlace:
    """Where a dialogue turn was said: its dialogue (the game's id), its position there from 0, the speaker's name."""

    dialogue_id: str
    position: int
    speaker_name: str = ""


@dataclass(frozen=True)
class NewMemory:
    """A validated fact to store; ``embedding`` is set by the caller or by the embedder."""

    speaker: Speaker
    subject: Subject
    subject_id: str
    content_type: ContentType
    content: str
    importance: int = DEFAULT_IMPORTANCE
    tier: Tier = Tier.KNOWLEDGE
    slot: str | None = None
    supersedes: tuple[UUID, ...] = ()
    valid_at: datetime | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    embedding: Vector | None = None
    related: tuple[MemoryRef, ...] = ()
    parents: tuple[MemoryRef, ...] = ()
    visibility: Visibility = Visibility.PRIVATE
    place: TurnPlace | None = None
    """Set for a turn of a stated dialogue (StoreDialogue): a duplicate only of the turn stored at its place."""


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
    """For a turn of a stated dialogue: its dialogue and position."""


@dataclass(frozen=True)
class StoreResult:
    """The outcome for one fact of a store request."""

    memory_id: UUID
    outcome: StoreOutcome
    superseded_ids: tuple[UUID, ...] = ()


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
class ReadView:
    """Which memories a read sees: a timeline (None: the player's live one) as known at a system time."""

    timeline_id: int | None = None
    known_at: datetime | None = None


LIVE = ReadView()
"""The player's live timeline as it is now: what every read sees unless it asks otherwise."""


@dataclass(frozen=True)
class SearchQuery:
    """A validated search request; ``embedding`` is the query vector once known."""

    scope: Scope
    text: str
    limit: int
    weights: Weights
    now: datetime
    as_of: datetime | None = None
    filter: MemoryFilter = MemoryFilter()
    fusion: Fusion = Fusion.WEIGHTED
    include_invalidated: bool = False
    embedding: Vector | None = None
    hops: int = 0
    deepen: bool = False
    deepen_min_relevance: float = 0.0
    view: ReadView = LIVE
    recency_days: float = RECENCY_DAYS
    """Recency decays by 1/e every this many days (of the game's clock when the request sends game time)."""
    period: tuple[datetime, datetime] | None = None
    """``[start, end)`` the question names ("last May"): its memories join the candidates by cosine."""
    period_first: bool = False
    """Rank the memories valid in ``period`` above all others (each group by its final score)."""
    include_shared: bool = False
    """Also rank the player's memories that other heroines heard and stored as shared."""
    turn_weights: Weights | None = None
    """The weighted sum's weights for memories of tier source (a stated dialogue's turns); None: ``weights`` for
    every memory. The service's defaults set it; weights a request or a heroine's settings give apply to all."""


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


@dataclass(frozen=True)
class AnalysedFact:
    """A fact ready to write but for its vector: tokenised, with its id and business time fixed."""

    id: UUID
    fact: NewMemory
    valid_at: datetime
    terms: tuple[str, ...]
    content_key: str
    meaning: tuple[str, ...]
    """The grammatical morphemes that change what the text states (text/meaning.py), for the duplicate rule."""

    def embedded(self, vector: Vector, model: str) -> PreparedMemory:
        """The fact with its vector, ready to write."""
        return PreparedMemory(self.id, self.fact, self.valid_at, self.terms, self.content_key, self.meaning,
                              embedding=vector, embedding_model=model)


@dataclass(frozen=True, kw_only=True)
class PreparedMemory(AnalysedFact):
    """A fact ready to write: validated, embedded, tokenised, with its id and business time fixed."""

    embedding: Vector
    embedding_model: str


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
    created_at: datetime | None
    live: bool
