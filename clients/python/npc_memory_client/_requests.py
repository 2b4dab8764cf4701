"""Plain values → request messages."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Protocol
from uuid import UUID

from google.protobuf import struct_pb2, timestamp_pb2

from npc_memory_client._enums import to_wire
from npc_memory_client._shapes import not_text, one_or_many
from npc_memory_client.inputs import Fact, Facts, HistoryOptions, ListOptions, SearchOptions, UpdateOptions, ViewOptions
from npc_memory_client.model import MemoryFilter, Visibility, Weights
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc


def timestamp(when: datetime) -> timestamp_pb2.Timestamp:
    """A Timestamp of an aware datetime; naive datetimes are rejected rather than guessed."""
    if when.tzinfo is None:
        raise ValueError(f"{when!r} has no time zone; pass an aware datetime (e.g. tzinfo=UTC)")
    ts = timestamp_pb2.Timestamp()
    ts.FromDatetime(when.astimezone(UTC))
    return ts


def struct(values: dict[str, Any]) -> struct_pb2.Struct:
    """A Struct of JSON-like values."""
    out = struct_pb2.Struct()
    out.update(values)
    return out


def scope(user_id: str, heroine_id: str) -> pb.Scope:
    """The scope message."""
    return pb.Scope(user_id=user_id, heroine_id=heroine_id)


_IDS = (UUID, str)
_ID_EXAMPLE = "a memory id (UUID or str) or a list of them"
_REFS = (UUID, str, int)
_REF_EXAMPLE = "a memory id, the position (int) of another fact of the call, or a list of them"
_FACT_EXAMPLE = 'a Fact, a text ("고양이를 좋아함") or a list of them (["고양이를 좋아함", Fact(...)])'


def memory_input(fact: Fact | str) -> pb.MemoryInput:
    """One fact; a bare string is the player's own fact about themself."""
    f = Fact(fact) if isinstance(fact, str) else fact
    out = pb.MemoryInput(
        speaker=to_wire(f.speaker),
        subject=to_wire(f.subject),
        subject_id=f.subject_id,
        content_type=to_wire(f.content_type),
        content=f.content,
        importance=f.importance,
        tier=to_wire(f.tier) if f.tier else pb.TIER_UNSPECIFIED,
        slot=f.slot,
        supersedes=[str(s) for s in one_or_many(f.supersedes, _IDS, "Fact.supersedes", _ID_EXAMPLE)],
        embedding=not_text(f.embedding, "Fact.embedding", "a list of floats"),
        related=[memory_ref(r) for r in one_or_many(f.related, _REFS, "Fact.related", _REF_EXAMPLE)],
        parents=[memory_ref(r) for r in one_or_many(f.parents, _REFS, "Fact.parents", _REF_EXAMPLE)],
        visibility=to_wire(Visibility.SHARED if f.shared else Visibility.PRIVATE),
    )
    if f.valid_at is not None:
        out.valid_at.CopyFrom(timestamp(f.valid_at))
    if f.valid_game_day is not None:
        out.valid_game_day.CopyFrom(game_time(f.valid_game_day))
    if f.metadata:
        out.metadata.CopyFrom(struct(f.metadata))
    return out


def memory_ref(ref: UUID | str | int) -> pb.MemoryRef:
    """A stored memory's id, or the position of another fact of the same call."""
    return pb.MemoryRef(batch_index=ref) if isinstance(ref, int) else pb.MemoryRef(memory_id=str(ref))


def memory_filter(f: MemoryFilter) -> pb.MemoryFilter:
    """The filter message."""
    return pb.MemoryFilter(
        speakers=[to_wire(s) for s in not_text(f.speakers, "MemoryFilter.speakers", "a tuple of Speaker")],
        subjects=[to_wire(s) for s in not_text(f.subjects, "MemoryFilter.subjects", "a tuple of Subject")],
        subject_ids=not_text(f.subject_ids, "MemoryFilter.subject_ids", "a tuple of str"),
        content_types=[to_wire(c) for c in not_text(f.content_types, "MemoryFilter.content_types",
                                                    "a tuple of ContentType")],
        min_importance=f.min_importance,
        tiers=[to_wire(t) for t in not_text(f.tiers, "MemoryFilter.tiers", "a tuple of Tier")],
        slot=f.slot or "",
    )


def store(user_id: str, heroine_id: str, facts: Facts, request_id: str | None) -> svc.StoreMemoriesRequest:
    """A StoreMemories request; one fact or text is a batch of one."""
    batch = one_or_many(facts, (Fact, str), "facts", _FACT_EXAMPLE)
    return svc.StoreMemoriesRequest(
        scope=scope(user_id, heroine_id), memories=[memory_input(f) for f in batch], request_id=request_id or ""
    )


class _ViewRequest(Protocol):
    """A read request with the view fields."""

    timeline_id: int

    @property
    def known_at(self) -> timestamp_pb2.Timestamp: ...


def read_view(out: _ViewRequest, opts: ViewOptions) -> None:
    """Set a read request's timeline and system time from the options given."""
    out.timeline_id = opts.get("timeline_id", 0)
    if (known_at := opts.get("known_at")) is not None:
        out.known_at.CopyFrom(timestamp(known_at))


def game_time(day: float) -> pb.GameTime:
    """A game day (fractions are hours of it)."""
    return pb.GameTime(day=day)


def search(user_id: str, heroine_id: str, query: str, opts: SearchOptions) -> svc.SearchMemoriesRequest:
    """A SearchMemories request."""
    out = svc.SearchMemoriesRequest(
        scope=scope(user_id, heroine_id), query=query, limit=opts.get("limit", 0),
        query_embedding=list(opts.get("query_embedding", ())),
        include_invalidated=opts.get("include_invalidated", False),
        hops=opts.get("hops", 0), deepen=opts.get("deepen", False),
        deepen_min_relevance=opts.get("deepen_min_relevance", 0.0),
        include_shared=opts.get("include_shared", False),
    )
    if (w := opts.get("weights")) is not None:
        out.weights.CopyFrom(_weights(w))
    if (as_of := opts.get("as_of")) is not None:
        out.as_of.CopyFrom(timestamp(as_of))
    if (now := opts.get("now")) is not None:
        out.now.CopyFrom(timestamp(now))
    if (f := opts.get("filter")) is not None:
        out.filter.CopyFrom(memory_filter(f))
    if (fusion := opts.get("fusion")) is not None:
        out.fusion = to_wire(fusion)
    if (day := opts.get("as_of_game_day")) is not None:
        out.as_of_game_day.CopyFrom(game_time(day))
    if (day := opts.get("now_game_day")) is not None:
        out.now_game_day.CopyFrom(game_time(day))
    read_view(out, opts)
    return out


def _weights(w: Weights) -> pb.Weights:
    return pb.Weights(recency=w.recency, importance=w.importance, relevance=w.relevance, keyword=w.keyword)


def list_page(user_id: str, heroine_id: str, opts: ListOptions) -> svc.ListMemoriesRequest:
    """A ListMemories request."""
    out = svc.ListMemoriesRequest(
        scope=scope(user_id, heroine_id), page_size=opts.get("page_size", 0),
        page_token=opts.get("page_token", ""), include_invalidated=opts.get("include_invalidated", False),
        include_shared=opts.get("include_shared", False),
    )
    if (f := opts.get("filter")) is not None:
        out.filter.CopyFrom(memory_filter(f))
    read_view(out, opts)
    return out


def update(user_id: str, heroine_id: str, memory_id: str, opts: UpdateOptions) -> svc.UpdateMemoryRequest:
    """An UpdateMemory request whose mask names exactly the given fields."""
    out = svc.UpdateMemoryRequest(scope=scope(user_id, heroine_id), memory_id=memory_id)
    if "importance" in opts:
        out.importance = opts["importance"]
        out.update_mask.paths.append("importance")
    if "tier" in opts:
        out.tier = to_wire(opts["tier"])
        out.update_mask.paths.append("tier")
    if "metadata" in opts:
        out.metadata.CopyFrom(struct(opts["metadata"]))
        out.update_mask.paths.append("metadata")
    if "content" in opts:
        out.content = opts["content"]
        out.update_mask.paths.append("content")
    if "valid_at" in opts:
        out.valid_at.CopyFrom(timestamp(opts["valid_at"]))
    if "valid_game_day" in opts:
        out.valid_game_day.CopyFrom(game_time(opts["valid_game_day"]))
    return out


def history(user_id: str, heroine_id: str, opts: HistoryOptions) -> svc.GetMemoryHistoryRequest:
    """A GetMemoryHistory request."""
    out = svc.GetMemoryHistoryRequest(
        scope=scope(user_id, heroine_id), subject_id=opts.get("subject_id", ""), slot=opts.get("slot", ""),
        memory_id=str(opts.get("memory_id", "")), page_size=opts.get("page_size", 0),
        page_token=opts.get("page_token", ""),
    )
    read_view(out, opts)
    return out
