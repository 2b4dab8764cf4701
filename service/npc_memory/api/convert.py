"""Domain values → proto messages."""

from __future__ import annotations

from datetime import UTC, datetime

from google.protobuf import timestamp_pb2
from npc_memory_client.v1 import extraction_pb2 as ex_pb
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc

from npc_memory.api import enums
from npc_memory.domain.gametime import game_day
from npc_memory.domain.jobs import Job, JobResult
from npc_memory.domain.links import Expansion, Link, LinkKind, LinkView
from npc_memory.domain.model import Memory, SavePoint, Scope, ScoredMemory, StoreResult, Timeline

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def timestamp(when: datetime) -> timestamp_pb2.Timestamp:
    """A proto Timestamp of a datetime (a naive one is taken as UTC)."""
    if when.tzinfo is None:
        ts = timestamp_pb2.Timestamp()
        ts.FromDatetime(when)
        return ts
    # Integer arithmetic on the timedelta: protobuf's FromDatetime was ~2% of the server's samples under search
    # load (it formats through several Python steps); days/seconds/microseconds are already normalised.
    delta = when - _EPOCH
    return timestamp_pb2.Timestamp(seconds=delta.days * 86_400 + delta.seconds, nanos=delta.microseconds * 1000)


def memory(m: Memory, asked: Scope | None = None) -> pb.Memory:
    """The wire form of a stored row; a row of another scope than ``asked`` is marked with its heroine."""
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
        visibility=enums.to_proto(enums.VISIBILITIES, m.visibility),
        shared_from=m.scope.heroine_id if asked is not None and m.scope != asked else "",
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


def scored(s: ScoredMemory, asked: Scope | None = None) -> pb.ScoredMemory:
    """A search hit with its scores (marked as shared when it is of another scope than ``asked``)."""
    sc = s.scores
    return pb.ScoredMemory(
        memory=memory(s.memory, asked),
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


def extraction_job(job: Job) -> ex_pb.ExtractionJob:
    """The wire form of an extraction job."""
    result = job.result or JobResult()
    return ex_pb.ExtractionJob(
        job_id=str(job.id),
        scope=pb.Scope(user_id=job.scope.user_id, heroine_id=job.scope.heroine_id),
        dialogue_id=job.dialogue_id,
        state=enums.JOB_STATES[job.state],
        attempts=job.attempts,
        last_error=job.last_error,
        memories=[ex_pb.ExtractedMemory(fact_index=m.index, content=m.content, result=store_result(m.result))
                  for m in result.memories],
        rejected=[ex_pb.RejectedFact(fact_index=r.index, reasons=list(r.reasons), raw=r.raw)
                  for r in result.rejected],
        created_at=timestamp(job.created_at),
        updated_at=timestamp(job.updated_at),
    )
