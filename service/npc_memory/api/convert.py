"""Domain values → proto messages."""

from __future__ import annotations

from datetime import UTC, datetime

from google.protobuf import timestamp_pb2
from npc_memory_client.v1 import extraction_pb2 as ex_pb
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc

from npc_memory.api import enums
from npc_memory.api.wire_cache import WireCache
from npc_memory.domain.gametime import game_day
from npc_memory.domain.jobs import Job, JobResult
from npc_memory.domain.links import Expansion, Link, LinkKind, LinkView
from npc_memory.domain.model import Memory, SavePoint, Scope, ScoredMemory, StoreResult, Timeline

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_HITS = WireCache()


def set_timestamp(field: timestamp_pb2.Timestamp, when: datetime) -> None:
    """Write ``when`` into a Timestamp field in place (a naive datetime is taken as UTC)."""
    if when.tzinfo is None:
        field.FromDatetime(when)
        return
    # Integer arithmetic on the timedelta: protobuf's FromDatetime was ~2% of the server's samples under search
    # load (it formats through several Python steps); days/seconds/microseconds are already normalised.
    delta = when - _EPOCH
    field.seconds = delta.days * 86_400 + delta.seconds
    field.nanos = delta.microseconds * 1000


def timestamp(when: datetime) -> timestamp_pb2.Timestamp:
    """A proto Timestamp of a datetime (a naive one is taken as UTC)."""
    out = timestamp_pb2.Timestamp()
    set_timestamp(out, when)
    return out


def fill_memory(out: pb.Memory, m: Memory, asked: Scope | None = None) -> None:
    """Write a stored row's wire form into ``out``; a row of another scope than ``asked`` is marked with its heroine.

    In place, so a search's hits are built inside the response: building each message and copying it into its
    parent twice (ScoredMemory, then the response's list) was a third of the response's cost.
    """
    out.memory_id = str(m.id)
    out.scope.user_id = m.scope.user_id
    out.scope.heroine_id = m.scope.heroine_id
    out.speaker = enums.SPEAKER_NUMBERS[m.speaker]
    out.subject = enums.SUBJECT_NUMBERS[m.subject]
    out.subject_id = m.subject_id
    out.content_type = enums.CONTENT_TYPE_NUMBERS[m.content_type]
    out.content = m.content
    out.importance = m.importance
    out.tier = enums.TIER_NUMBERS[m.tier]
    if m.slot:
        out.slot = m.slot
    set_timestamp(out.valid_at, m.valid_at)
    set_timestamp(out.created_at, m.created_at)
    set_timestamp(out.updated_at, m.updated_at)
    if m.superseded_by:
        out.superseded_by = str(m.superseded_by)
    if m.close_reason:
        out.close_reason = enums.CLOSE_REASONS[m.close_reason]
    out.embedding_model = m.embedding_model
    out.timeline_id = m.timeline_id
    out.visibility = enums.VISIBILITY_NUMBERS[m.visibility]
    if asked is not None and m.scope != asked:
        out.shared_from = m.scope.heroine_id
    if m.metadata:
        out.metadata.update(m.metadata)
    if m.place is not None:
        out.dialogue_id = m.place.dialogue_id
        out.dialogue_position = m.place.position
        out.speaker_name = m.place.speaker_name
    out.valid_game_day.day = game_day(m.valid_at)
    if m.invalid_at is not None:
        set_timestamp(out.invalid_at, m.invalid_at)
        out.invalid_game_day.day = game_day(m.invalid_at)


def memory(m: Memory, asked: Scope | None = None) -> pb.Memory:
    """The wire form of a stored row; a row of another scope than ``asked`` is marked with its heroine."""
    out = pb.Memory()
    fill_memory(out, m, asked)
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


def fill_answered(out: pb.Memory, m: Memory, asked: Scope | None = None) -> None:
    """``fill_memory`` for a memory answered again and again (a held scope's): from its bytes when seen before."""
    _HITS.fill(out, m, fill_memory)
    if asked is not None and m.scope != asked:
        out.shared_from = m.scope.heroine_id


def fill_scored(out: pb.ScoredMemory, s: ScoredMemory, asked: Scope | None = None) -> None:
    """Write a search hit with its scores into ``out`` (marked as shared when of another scope than ``asked``)."""
    fill_answered(out.memory, s.memory, asked)
    sc, scores = s.scores, out.scores
    scores.recency, scores.importance, scores.relevance = sc.recency, sc.importance, sc.relevance
    scores.keyword, scores.final = sc.keyword, sc.final
    if s.via_memory_id:
        out.via_memory_id = str(s.via_memory_id)
    out.hops = s.hops
    out.cosine = s.cosine


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
