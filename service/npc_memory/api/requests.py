"""Proto requests → validated domain values (or InvalidArgumentError naming every bad field)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc

from npc_memory.api import enums
from npc_memory.api.validation import DEFAULT_CONTENT_TYPE, DEFAULT_TIER, MAX_REQUEST_ID, Checker
from npc_memory.config import SearchConfig, WriteConfig
from npc_memory.domain.model import (
    Fusion,
    MemoryFilter,
    NewMemory,
    Scope,
    SearchQuery,
    Tier,
    Visibility,
)
from npc_memory.domain.paging import BadPageTokenError, Cursor, decode_cursor

MAX_QUERY_CHARS = 2000
DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 500
UPDATABLE = frozenset({"importance", "tier", "metadata", "content"})


@dataclass(frozen=True)
class StoreRequest:
    """A validated StoreMemories call."""

    scope: Scope
    facts: list[NewMemory]
    request_id: str


def _fact(c: Checker, path: str, m: pb.MemoryInput, scope: Scope, write: WriteConfig, dim: int) -> NewMemory:
    speaker = c.enum(f"{path}.speaker", m.speaker, enums.SPEAKERS)
    subject = c.enum(f"{path}.subject", m.subject, enums.SUBJECTS)
    return NewMemory(
        speaker=speaker,  # type: ignore[arg-type]  # None only when a violation was recorded
        subject=subject,  # type: ignore[arg-type]
        subject_id=c.subject_id(f"{path}.subject_id", subject, m.subject_id, scope),
        content_type=c.enum(f"{path}.content_type", m.content_type, enums.CONTENT_TYPES, DEFAULT_CONTENT_TYPE)
        or DEFAULT_CONTENT_TYPE,
        content=c.text(f"{path}.content", m.content, max_chars=write.max_content_chars),
        importance=c.importance(f"{path}.importance", m.importance),
        tier=c.enum(f"{path}.tier", m.tier, enums.TIERS, DEFAULT_TIER) or DEFAULT_TIER,
        slot=c.slot(f"{path}.slot", m.slot),
        supersedes=tuple(c.uuid(f"{path}.supersedes[{j}]", s) for j, s in enumerate(m.supersedes)),
        valid_at=c.timestamp(f"{path}.valid_at", m.valid_at, m.HasField("valid_at")),
        metadata=c.metadata(f"{path}.metadata", m.metadata),
        embedding=c.vector(f"{path}.embedding", m.embedding, dim),
        visibility=c.enum(f"{path}.visibility", m.visibility, enums.VISIBILITIES, Visibility.PRIVATE)
        or Visibility.PRIVATE,
    )


def parse_store(request: svc.StoreMemoriesRequest, write: WriteConfig, dim: int) -> StoreRequest:
    """Validate a StoreMemories request."""
    c = Checker()
    scope = c.scope("scope", request.scope, request.HasField("scope"))
    if not request.memories:
        c.bad("memories", "at least one memory is required")
    elif len(request.memories) > write.max_batch:
        c.bad("memories", f"{len(request.memories)} memories; the maximum batch is {write.max_batch}")
    facts = [_fact(c, f"memories[{i}]", m, scope, write, dim) for i, m in enumerate(request.memories)]
    c.text("request_id", request.request_id, max_chars=MAX_REQUEST_ID, required=False)
    c.done()
    return StoreRequest(scope, facts, request.request_id)


def _filter(c: Checker, f: pb.MemoryFilter) -> MemoryFilter:
    return MemoryFilter(
        speakers=c.enums("filter.speakers", f.speakers, enums.SPEAKERS),
        subjects=c.enums("filter.subjects", f.subjects, enums.SUBJECTS),
        subject_ids=tuple(f.subject_ids),
        content_types=c.enums("filter.content_types", f.content_types, enums.CONTENT_TYPES),
        min_importance=c.importance("filter.min_importance", f.min_importance, default=0),
        tiers=c.enums("filter.tiers", f.tiers, enums.TIERS),
        slot=c.slot("filter.slot", f.slot),
    )


def parse_search(request: svc.SearchMemoriesRequest, settings: SearchConfig, dim: int) -> SearchQuery:
    """Validate a SearchMemories request; weights default per heroine."""
    c = Checker()
    scope = c.scope("scope", request.scope, request.HasField("scope"))
    text = c.text("query", request.query, max_chars=MAX_QUERY_CHARS, required=False)
    embedding = c.vector("query_embedding", request.query_embedding, dim)
    limit = request.limit or settings.default_limit
    if not 1 <= limit <= settings.max_limit:
        c.bad("limit", f"must be between 1 and {settings.max_limit} (0 means {settings.default_limit})")
    weights = (
        c.weights("weights", request.weights)
        if request.HasField("weights")
        else settings.weights_for(scope.heroine_id)
    )
    now = c.timestamp("now", request.now, request.HasField("now")) or datetime.now(UTC)
    as_of = c.timestamp("as_of", request.as_of, request.HasField("as_of"))
    flt = _filter(c, request.filter)
    for i, sid in enumerate(flt.subject_ids):
        c.text(f"filter.subject_ids[{i}]", sid, max_chars=64)
    fusion = c.enum("fusion", request.fusion, enums.FUSIONS, Fusion.WEIGHTED) or Fusion.WEIGHTED
    c.done()
    return SearchQuery(
        scope=scope, text=text, limit=limit, weights=weights, now=now, as_of=as_of, filter=flt,
        fusion=fusion, include_invalidated=request.include_invalidated, embedding=embedding,
        include_shared=request.include_shared,
    )


@dataclass(frozen=True)
class ListRequest:
    """A validated ListMemories call."""

    scope: Scope
    filter: MemoryFilter
    include_invalidated: bool
    page_size: int
    after: Cursor | None
    include_shared: bool = False


def parse_list(request: svc.ListMemoriesRequest) -> ListRequest:
    """Validate a ListMemories request."""
    c = Checker()
    scope = c.scope("scope", request.scope, request.HasField("scope"))
    page_size = request.page_size or DEFAULT_PAGE_SIZE
    if not 1 <= page_size <= MAX_PAGE_SIZE:
        c.bad("page_size", f"must be between 1 and {MAX_PAGE_SIZE} (0 means {DEFAULT_PAGE_SIZE})")
    after = None
    if request.page_token:
        try:
            after = decode_cursor(request.page_token)
        except BadPageTokenError:
            c.bad("page_token", "is not a token from a previous ListMemories response")
    flt = _filter(c, request.filter)
    c.done()
    return ListRequest(scope, flt, request.include_invalidated, page_size, after, request.include_shared)


def parse_scoped_id(request: svc.GetMemoryRequest | svc.InvalidateMemoryRequest) -> tuple[Scope, UUID]:
    """Validate the scope and memory_id of a one-memory request."""
    c = Checker()
    scope = c.scope("scope", request.scope, request.HasField("scope"))
    memory_id = c.uuid("memory_id", request.memory_id)
    c.done()
    return scope, memory_id


def parse_invalidate(request: svc.InvalidateMemoryRequest) -> tuple[Scope, UUID, datetime | None]:
    """Validate an InvalidateMemory request."""
    scope, memory_id = parse_scoped_id(request)
    c = Checker()
    invalid_at = c.timestamp("invalid_at", request.invalid_at, request.HasField("invalid_at"))
    c.done()
    return scope, memory_id, invalid_at


@dataclass(frozen=True)
class UpdateRequest:
    """A validated UpdateMemory call: only the fields named by the mask are set."""

    scope: Scope
    memory_id: UUID
    importance: int | None
    tier: Tier | None
    metadata: dict[str, Any] | None
    content: str | None
    valid_at: datetime | None


def parse_update(request: svc.UpdateMemoryRequest, write: WriteConfig) -> UpdateRequest:
    """Validate an UpdateMemory request against its field mask."""
    c = Checker()
    scope = c.scope("scope", request.scope, request.HasField("scope"))
    memory_id = c.uuid("memory_id", request.memory_id)
    paths = set(request.update_mask.paths)
    if not paths:
        c.bad("update_mask", "name at least one of: " + ", ".join(sorted(UPDATABLE)))
    for p in sorted(paths - UPDATABLE):
        c.bad("update_mask", f"unknown or read-only path '{p}'")
    importance = c.importance("importance", request.importance, None) if "importance" in paths else None
    tier = c.enum("tier", request.tier, enums.TIERS) if "tier" in paths else None
    metadata = c.metadata("metadata", request.metadata) if "metadata" in paths else None
    content = (
        c.text("content", request.content, max_chars=write.max_content_chars) if "content" in paths else None
    )
    valid_at = c.timestamp("valid_at", request.valid_at, request.HasField("valid_at"))
    c.done()
    return UpdateRequest(scope, memory_id, importance, tier, metadata, content, valid_at)


@dataclass(frozen=True)
class HistoryRequest:
    """A validated GetMemoryHistory call: a subject (and slot), or one memory's chain."""

    scope: Scope
    subject_id: str
    slot: str | None
    memory_id: UUID | None


def parse_history(request: svc.GetMemoryHistoryRequest) -> HistoryRequest:
    """Validate a GetMemoryHistory request."""
    c = Checker()
    scope = c.scope("scope", request.scope, request.HasField("scope"))
    memory_id = c.uuid("memory_id", request.memory_id) if request.memory_id else None
    if memory_id is None and not request.subject_id:
        c.bad("subject_id", "is required unless memory_id is given")
    c.text("subject_id", request.subject_id, max_chars=64, required=False)
    slot = c.slot("slot", request.slot)
    c.done()
    return HistoryRequest(scope, request.subject_id, slot, memory_id)


def parse_forget(request: svc.ForgetPlayerRequest) -> str:
    """Validate a ForgetPlayer request."""
    c = Checker()
    user_id = c.user_id("user_id", request.user_id)
    c.done()
    return user_id
