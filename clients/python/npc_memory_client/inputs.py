"""Plain values a caller passes in: facts to store, search options, updates."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypedDict
from uuid import UUID

from npc_memory_client.model import ContentType, Fusion, MemoryFilter, Speaker, Subject, Tier, Weights


@dataclass(frozen=True)
class Fact:
    """One fact to store. Only ``content`` is required; a bare string means a fact the player said about themself."""

    content: str
    speaker: Speaker = Speaker.USER
    subject: Subject = Subject.USER
    subject_id: str = ""
    content_type: ContentType = ContentType.FACT
    importance: int = 0
    """1-10; 0 means the server's default (5)."""
    tier: Tier | None = None
    slot: str = ""
    supersedes: UUID | str | Sequence[UUID | str] = ()
    """The memories this fact replaces: one id, or a list of them."""
    valid_at: datetime | None = None
    valid_game_day: float | None = None
    """Instead of ``valid_at``: the game day the fact became true."""
    metadata: dict[str, Any] = field(default_factory=dict)
    embedding: Sequence[float] = ()
    related: UUID | str | int | Sequence[UUID | str | int] = ()
    """Memories this fact is related to: ids, or the position (int) of another fact of the same call."""
    parents: UUID | str | int | Sequence[UUID | str | int] = ()
    """Memories this fact was distilled from, named the same way."""
    shared: bool = False
    """Visible to every heroine of the player (when a read asks for shared memories), not only this one."""


Facts = Fact | str | Sequence[Fact | str]
"""What ``store`` takes: one fact, one text (the player's own fact about themself), or a list of either."""


class ViewOptions(TypedDict, total=False):
    """Which state a read sees: a timeline (default: the player's live one) as known at a system time (default now)."""

    timeline_id: int
    known_at: datetime


class SearchOptions(ViewOptions, total=False):
    """Optional arguments of a search."""

    limit: int
    weights: Weights
    as_of: datetime
    now: datetime
    filter: MemoryFilter
    fusion: Fusion
    include_invalidated: bool
    include_shared: bool
    query_embedding: Sequence[float]
    hops: int
    deepen: bool
    deepen_min_relevance: float
    as_of_game_day: float
    """Instead of ``as_of``: the game day to search at."""
    now_game_day: float
    """Instead of ``now``: the game's clock, in game days (recency then decays in game days)."""


class ListOptions(ViewOptions, total=False):
    """Optional arguments of a listing."""

    page_size: int
    page_token: str
    filter: MemoryFilter
    include_invalidated: bool
    include_shared: bool


class UpdateOptions(TypedDict, total=False):
    """The fields to change; only those given are sent (and named in the update mask)."""

    importance: int
    tier: Tier
    metadata: dict[str, Any]
    content: str
    valid_at: datetime
    valid_game_day: float
    """Instead of ``valid_at``: the game day the new version became true."""


class HistoryOptions(ViewOptions, total=False):
    """Which rows of a history: a subject (optionally one slot), or one memory's version chain; and which page."""

    subject_id: str
    slot: str
    memory_id: UUID | str
    page_size: int
    page_token: str
