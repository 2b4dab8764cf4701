"""Response messages → the client's plain values (Memory, ScoredMemory, StoreResult)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from google.protobuf import json_format, timestamp_pb2

from npc_memory_client._enums import from_wire
from npc_memory_client.model import (
    CloseReason,
    ContentType,
    Memory,
    Scope,
    ScoredMemory,
    Scores,
    Speaker,
    StoreOutcome,
    StoreResult,
    Subject,
    Tier,
    Visibility,
)
from npc_memory_client.v1 import memory_pb2 as pb


@dataclass(frozen=True)
class MemoryPage:
    """One page of a listing; ``next_page_token`` is empty on the last page."""

    memories: list[Memory]
    next_page_token: str


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
        visibility=from_wire(Visibility, m.visibility) if m.visibility else Visibility.PRIVATE,
    )


def scored(s: pb.ScoredMemory) -> ScoredMemory:
    """A search hit with its component scores."""
    sc = s.scores
    return ScoredMemory(
        memory=memory(s.memory),
        scores=Scores(
            recency=sc.recency, importance=sc.importance, relevance=sc.relevance, keyword=sc.keyword, final=sc.final
        ),
    )


def store_result(r: pb.StoreResult) -> StoreResult:
    """The outcome for one stored fact."""
    return StoreResult(
        memory_id=UUID(r.memory_id),
        outcome=from_wire(StoreOutcome, r.outcome),
        superseded_ids=tuple(UUID(i) for i in r.superseded_ids),
    )

