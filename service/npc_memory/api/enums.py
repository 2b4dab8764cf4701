"""Proto enum numbers ↔ domain enums."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from npc_memory_client.v1 import extraction_pb2 as ex_pb
from npc_memory_client.v1 import memory_pb2 as pb

from npc_memory.domain.jobs import JobState
from npc_memory.domain.model import (
    CloseReason,
    ContentType,
    Fusion,
    Speaker,
    StoreOutcome,
    Subject,
    Tier,
    Visibility,
)

SPEAKERS: dict[int, Speaker] = {pb.SPEAKER_USER: Speaker.USER, pb.SPEAKER_HEROINE: Speaker.HEROINE}
SUBJECTS: dict[int, Subject] = {
    pb.SUBJECT_USER: Subject.USER, pb.SUBJECT_HEROINE: Subject.HEROINE, pb.SUBJECT_WORLD: Subject.WORLD,
}
CONTENT_TYPES: dict[int, ContentType] = {
    pb.CONTENT_TYPE_FACT: ContentType.FACT,
    pb.CONTENT_TYPE_PREFERENCE: ContentType.PREFERENCE,
    pb.CONTENT_TYPE_TRAIT: ContentType.TRAIT,
    pb.CONTENT_TYPE_EVENT: ContentType.EVENT,
    pb.CONTENT_TYPE_OPINION: ContentType.OPINION,
    pb.CONTENT_TYPE_PERSONAL: ContentType.PERSONAL,
    pb.CONTENT_TYPE_RELATIONSHIP: ContentType.RELATIONSHIP,
}
TIERS: dict[int, Tier] = {pb.TIER_GIST: Tier.GIST, pb.TIER_KNOWLEDGE: Tier.KNOWLEDGE, pb.TIER_SOURCE: Tier.SOURCE}
VISIBILITIES: dict[int, Visibility] = {
    pb.VISIBILITY_PRIVATE: Visibility.PRIVATE, pb.VISIBILITY_SHARED: Visibility.SHARED,
}
FUSIONS: dict[int, Fusion] = {pb.FUSION_METHOD_WEIGHTED: Fusion.WEIGHTED, pb.FUSION_METHOD_RRF: Fusion.RRF}
CLOSE_REASONS: dict[CloseReason, pb.CloseReason.ValueType] = {
    CloseReason.SUPERSEDED: pb.CLOSE_REASON_SUPERSEDED,
    CloseReason.INVALIDATED: pb.CLOSE_REASON_INVALIDATED,
    CloseReason.RETIRED: pb.CLOSE_REASON_RETIRED,
}
OUTCOMES: dict[StoreOutcome, pb.StoreOutcome.ValueType] = {
    StoreOutcome.CREATED: pb.STORE_OUTCOME_CREATED,
    StoreOutcome.SUPERSEDED: pb.STORE_OUTCOME_SUPERSEDED,
    StoreOutcome.DUPLICATE: pb.STORE_OUTCOME_DUPLICATE,
    StoreOutcome.HISTORICAL: pb.STORE_OUTCOME_HISTORICAL,
}

JOB_STATES: dict[JobState, ex_pb.ExtractionJobState.ValueType] = {
    JobState.PENDING: ex_pb.EXTRACTION_JOB_STATE_PENDING,
    JobState.RUNNING: ex_pb.EXTRACTION_JOB_STATE_RUNNING,
    JobState.DONE: ex_pb.EXTRACTION_JOB_STATE_DONE,
    JobState.FAILED: ex_pb.EXTRACTION_JOB_STATE_FAILED,
}


def _numbers(table: Mapping[int, object]) -> dict[Any, Any]:
    """A table read backwards: domain value → proto number (Any because each proto enum is its own type)."""
    return {v: k for k, v in table.items()}


# Built once: every hit of every search turns five enums back into numbers (a scan per lookup was ~40% of
# building a Memory message).
SPEAKER_NUMBERS = _numbers(SPEAKERS)
SUBJECT_NUMBERS = _numbers(SUBJECTS)
CONTENT_TYPE_NUMBERS = _numbers(CONTENT_TYPES)
TIER_NUMBERS = _numbers(TIERS)
VISIBILITY_NUMBERS = _numbers(VISIBILITIES)
