"""Domain values → proto messages."""

from __future__ import annotations

from datetime import datetime

from google.protobuf import timestamp_pb2
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc

from npc_memory.api import enums
from npc_memory.domain.gametime import game_day
from npc_memory.domain.links import Expansion, Link, LinkKind, LinkView
from npc_memory.domain.model import Memory, SavePoint, ScoredMemory, StoreResult, Timeline


def timestamp(when: datetime) -> timestamp_pb2.Timestamp:
    """A proto Timestamp of an aware datetime."""
    ts = timestamp_pb2.Timestamp()
    ts.FromDatetime(when)
    return ts


def memory(m: Memory) -> pb.Memory:
    """The wire form of a stored row."""
    out = pb.Memory(
        memory_id=str(m.id),
        scope=pb.Scope(user_id=m.scope.user_id, heroine_id=m.scope.heroine_id),
        speaker=enums.to_proto(enums.SPEAKERS, m.speaker),
        subject=enums.to_proto(enums.SUBJECTS, m.subject),
        subject_id=m.subject_id,
        content_type=enums.to_proto(enums.CONTENT_TYPES, m.content_type),
        content=m.content,
        importance=m.importance,
        tier=enums.to_proto(enums.TIERS, m.tier),
        slot=m.slot or "",
        valid_at=timestamp(m.valid_at),
        created_at=timestamp(m.created_at),
        updated_at=timestamp(m.updated_at),
        superseded_by=str(m.superseded_by) if m.superseded_by else "",
        close_reason=enums.CLOSE_REASONS[m.close_reason] if m.close_reason else pb.CLOSE_REASON_UNSPECIFIED,
        embedding_model=m.embedding_model,
        timeline_id=m.timeline_id,
    )
    out.metadata.update(m.metadata)
    out.valid_game_day.day = game_day(m.valid_at)
    if m.invalid_at is not None:
        out.invalid_at.CopyFrom(timestamp(m.invalid_at))
        out.invalid_game_day.day = game_day(m.invalid_at)
    return out


def save_point(s: SavePoint) -> pb.SavePoint:
    """A save slot."""
    return pb.SavePoint(save_id=s.save_id, timeline_id=s.timeline_id, saved_at=timestamp(s.saved_at))


def timeline(t: Timeline) -> pb.Timeline:
    """One of a player's timelines."""
    out = pb.Timeline(timeline_id=t.timeline_id, parent_timeline_id=t.parent_id or 0, save_id=t.save_id, live=t.live)
    if t.branched_at is not None:
        out.branched_at.CopyFrom(timestamp(t.branched_at))
    return out


def scored(s: ScoredMemory) -> pb.ScoredMemory:
    """A search hit with its scores."""
    sc = s.scores
    return pb.ScoredMemory(
        memory=memory(s.memory),
        scores=pb.Scores(
            recency=sc.recency, importance=sc.importance, relevance=sc.relevance, keyword=sc.keyword,
            final=sc.final,
        ),
        via_memory_id=str(s.via_memory_id) if s.via_memory_id else "",
        hops=s.hops,
        cosine=s.cosine,
    )


LINK_KINDS = {LinkKind.RELATED_TO: pb.LINK_KIND_RELATED_TO, LinkKind.DERIVED_FROM: pb.LINK_KIND_DERIVED_FROM}


def link(k: Link) -> pb.MemoryLink:
    """One link of a scope."""
    out = pb.MemoryLink(from_memory_id=str(k.from_id), to_memory_id=str(k.to_id), kind=LINK_KINDS[k.kind],
                        depth=k.depth, via=k.via)
    if k.discovered_at is not None:
        out.discovered_at.CopyFrom(timestamp(k.discovered_at))
    return out


def expansion(e: Expansion) -> svc.ExpandMemoryResponse:
    """What one ExpandMemory step found."""
    return svc.ExpandMemoryResponse(
        memory_id=str(e.memory_id), depth=e.depth, found=[link(k) for k, _ in e.found],
        memories=[memory(m) for _, m in e.found], total_linked=e.total_linked,
    )


def link_view(v: LinkView) -> svc.ListLinksResponse:
    """A memory's links by role."""
    return svc.ListLinksResponse(
        parents=[link(k) for k in v.parents], children=[link(k) for k in v.children],
        related=[link(k) for k in v.related],
    )


def store_result(r: StoreResult) -> pb.StoreResult:
    """The outcome of one stored fact."""
    return pb.StoreResult(
        memory_id=str(r.memory_id),
        outcome=enums.OUTCOMES[r.outcome],
        superseded_ids=[str(i) for i in r.superseded_ids],
    )
