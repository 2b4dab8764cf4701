"""Response messages → the client's plain values (Memory, ScoredMemory, StoreResult)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from google.protobuf import json_format, timestamp_pb2

from npc_memory_client._enums import from_wire
from npc_memory_client.model import (
    CloseReason,
    ContentType,
    Expansion,
    Link,
    LinkKind,
    LinkView,
    Memory,
    SavePoint,
    SaveState,
    Scope,
    ScoredMemory,
    Scores,
    Speaker,
    StoreOutcome,
    StoreResult,
    Subject,
    Tier,
    Timeline,
    TurnPlace,
    Visibility,
)
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc


@dataclass(frozen=True)
class MemoryPage:
    """One page of a listing; ``next_page_token`` is empty on the last page."""

    memories: list[Memory]
    next_page_token: str


class SearchHits(list[ScoredMemory]):
    """A search's hits, best first (a list), and what the search's clock hid.

    ``hidden_by_clock``: when the search set its clock (``as_of``, ``now`` or their game-day twins), how many of the
    scope's current memories became true after it and were left out. Facts stored without ``valid_game_day`` are
    dated by the wall clock (game day ~9,800), so a game-clock search hides them and says so here; 0 otherwise.
    """

    hidden_by_clock: int

    def __init__(self, hits: Iterable[ScoredMemory] = (), hidden_by_clock: int = 0) -> None:
        super().__init__(hits)
        self.hidden_by_clock = hidden_by_clock


def search_hits(response: svc.SearchMemoriesResponse) -> SearchHits:
    """SearchMemories' answer: its hits and the count its clock hid."""
    return SearchHits((scored(x) for x in response.results), response.hidden_by_clock)


def _when(ts: timestamp_pb2.Timestamp) -> datetime:
    return ts.ToDatetime(tzinfo=UTC)


def _uuid(text: str) -> UUID | None:
    return UUID(text) if text else None


def memory(m: pb.Memory) -> Memory:
    """A stored row as a Memory with aware UTC datetimes."""
    metadata: dict[str, Any] = json_format.MessageToDict(m.metadata) if m.HasField("metadata") else {}
    return Memory(
        id=UUID(m.memory_id),
        scope=Scope(m.scope.user_id, m.scope.heroine_id),
        speaker=from_wire(Speaker, m.speaker),
        subject=from_wire(Subject, m.subject),
        subject_id=m.subject_id,
        content_type=from_wire(ContentType, m.content_type),
        content=m.content,
        importance=m.importance,
        tier=from_wire(Tier, m.tier),
        slot=m.slot or None,
        metadata=metadata,
        valid_at=_when(m.valid_at),
        invalid_at=_when(m.invalid_at) if m.HasField("invalid_at") else None,
        created_at=_when(m.created_at),
        updated_at=_when(m.updated_at),
        superseded_by=_uuid(m.superseded_by),
        close_reason=from_wire(CloseReason, m.close_reason) if m.close_reason else None,
        embedding_model=m.embedding_model,
        timeline_id=m.timeline_id,
        visibility=from_wire(Visibility, m.visibility) if m.visibility else Visibility.PRIVATE,
        place=TurnPlace(m.dialogue_id, m.dialogue_position, m.speaker_name) if m.dialogue_id else None,
        valid_game_day=m.valid_game_day.day if m.HasField("valid_game_day") else None,
        invalid_game_day=m.invalid_game_day.day if m.HasField("invalid_game_day") else None,
    )


def save_point(s: pb.SavePoint) -> SavePoint:
    """A save slot."""
    return SavePoint(s.save_id, s.timeline_id, _when(s.saved_at))


def timeline(t: pb.Timeline) -> Timeline:
    """One of a player's timelines."""
    return Timeline(
        t.timeline_id, t.parent_timeline_id or None, _when(t.branched_at) if t.HasField("branched_at") else None,
        t.save_id, t.live,
    )


def save_state(r: svc.ListSavePointsResponse) -> SaveState:
    """A ListSavePoints response."""
    return SaveState([save_point(s) for s in r.save_points], [timeline(t) for t in r.timelines], r.live_timeline_id)


def scored(s: pb.ScoredMemory) -> ScoredMemory:
    """A search hit with its component scores."""
    sc = s.scores
    return ScoredMemory(
        memory=memory(s.memory),
        scores=Scores(
            recency=sc.recency, importance=sc.importance, relevance=sc.relevance, keyword=sc.keyword, final=sc.final
        ),
        cosine=s.cosine,
        via_memory_id=UUID(s.via_memory_id) if s.via_memory_id else None,
        hops=s.hops,
    )


LINK_KINDS = {pb.LINK_KIND_RELATED_TO: LinkKind.RELATED_TO, pb.LINK_KIND_DERIVED_FROM: LinkKind.DERIVED_FROM}


def link(k: pb.MemoryLink) -> Link:
    """One link of a scope."""
    return Link(
        UUID(k.from_memory_id), UUID(k.to_memory_id), LINK_KINDS[k.kind], k.depth, k.via,
        _when(k.discovered_at) if k.HasField("discovered_at") else None,
    )


def expansion(r: svc.ExpandMemoryResponse) -> Expansion:
    """What one ExpandMemory step found."""
    return Expansion(
        UUID(r.memory_id), r.depth, [(link(k), memory(m)) for k, m in zip(r.found, r.memories, strict=True)],
        r.total_linked,
    )


def link_view(r: svc.ListLinksResponse) -> LinkView:
    """A memory's links by role."""
    return LinkView([link(k) for k in r.parents], [link(k) for k in r.children], [link(k) for k in r.related])


def store_result(r: pb.StoreResult) -> StoreResult:
    """The outcome for one stored fact."""
    return StoreResult(
        memory_id=UUID(r.memory_id),
        outcome=from_wire(StoreOutcome, r.outcome),
        superseded_ids=tuple(UUID(i) for i in r.superseded_ids),
    )

