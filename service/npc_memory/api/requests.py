"""Proto requests → validated domain values (or InvalidArgumentError naming every bad field)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar
from uuid import UUID

from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc

from npc_memory.api import enums
from npc_memory.api.validation import DEFAULT_CONTENT_TYPE, DEFAULT_TIER, MAX_REQUEST_ID, Checker
from npc_memory.config import SearchConfig, WriteConfig
from npc_memory.domain.model import (
    LIVE,
    Fusion,
    MemoryFilter,
    NewMemory,
    ReadView,
    Scope,
    SearchQuery,
    Tier,
    Visibility,
)
from npc_memory.domain.paging import BadPageTokenError, Cursor, HistoryCursor, decode_cursor, decode_history_cursor

MAX_QUERY_CHARS = 2000
DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 500
MAX_SUBJECT_ID = 64
MAX_HOPS = 2
MAX_SAVE_ID = 128
ReadRequest = (
    svc.SearchMemoriesRequest | svc.ListMemoriesRequest | svc.GetMemoryRequest | svc.GetMemoryHistoryRequest
)
T = TypeVar("T")
UPDATABLE = frozenset({"importance", "tier", "metadata", "content"})


@dataclass(frozen=True)
class StoreRequest:
    """A validated StoreMemories call."""

    scope: Scope
    facts: list[NewMemory]
    request_id: str


def _fact(
    c: Checker, index: int, request: svc.StoreMemoriesRequest, scope: Scope, write: WriteConfig, dim: int
) -> NewMemory:
    path, m, batch = f"memories[{index}]", request.memories[index], len(request.memories)
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
        valid_at=c.when(f"{path}.valid_at", m.valid_at, m.HasField("valid_at"),
                        f"{path}.valid_game_day", m.valid_game_day, m.HasField("valid_game_day")),
        metadata=c.metadata(f"{path}.metadata", m.metadata),
        embedding=c.vector(f"{path}.embedding", m.embedding, dim),
        related=tuple(c.ref(f"{path}.related[{j}]", r, index, batch) for j, r in enumerate(m.related)),
        parents=tuple(c.ref(f"{path}.parents[{j}]", r, index, batch) for j, r in enumerate(m.parents)),
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
    facts = [_fact(c, i, request, scope, write, dim) for i in range(len(request.memories))]
    c.text("request_id", request.request_id, max_chars=MAX_REQUEST_ID, required=False)
    c.done()
    return StoreRequest(scope, facts, request.request_id)


NO_FILTER = MemoryFilter()
"""What an unset filter asks for: any memory."""


def _filter(c: Checker, f: pb.MemoryFilter) -> MemoryFilter:
    if not f.ByteSize():  # nothing set: most requests (the fields' checks took ~15 us)
        return NO_FILTER
    return MemoryFilter(
        speakers=c.enums("filter.speakers", f.speakers, enums.SPEAKERS),
        subjects=c.enums("filter.subjects", f.subjects, enums.SUBJECTS),
        subject_ids=tuple(
            c.text(f"filter.subject_ids[{i}]", sid, max_chars=MAX_SUBJECT_ID) for i, sid in enumerate(f.subject_ids)
        ),
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
    # A request's own weights weigh every memory; the defaults weigh a dialogue's turns apart (the tier says which).
    turn_weights = None if request.HasField("weights") else settings.turn_weights_for(scope.heroine_id)
    now = c.when("now", request.now, request.HasField("now"),
                 "now_game_day", request.now_game_day, request.HasField("now_game_day")) or datetime.now(UTC)
    as_of = c.when("as_of", request.as_of, request.HasField("as_of"),
                   "as_of_game_day", request.as_of_game_day, request.HasField("as_of_game_day"))
    view = _view(c, request)
    flt = _filter(c, request.filter)
    fusion = c.enum("fusion", request.fusion, enums.FUSIONS, Fusion.WEIGHTED) or Fusion.WEIGHTED
    if not 0 <= request.hops <= MAX_HOPS:
        c.bad("hops", f"must be between 0 and {MAX_HOPS}")
    threshold = request.deepen_min_relevance or settings.deepen_min_relevance
    if not -1.0 <= threshold <= 1.0:
        c.bad("deepen_min_relevance", "must be a cosine between -1 and 1 (0 means the server's default)")
    c.done()
    return SearchQuery(
        scope=scope, text=text, limit=limit, weights=weights, now=now, as_of=as_of, filter=flt,
        fusion=fusion, include_invalidated=request.include_invalidated, embedding=embedding, view=view,
        hops=request.hops, deepen=request.deepen, deepen_min_relevance=threshold,
        recency_days=settings.recency_days_for(scope.heroine_id), include_shared=request.include_shared,
        turn_weights=turn_weights,
    )


def _view(c: Checker, request: ReadRequest) -> ReadView:
    """The timeline and system time a read asks for (the live timeline, now, by default)."""
    if not request.timeline_id and not request.HasField("known_at"):
        return LIVE
    return ReadView(
        timeline_id=c.timeline("timeline_id", request.timeline_id),
        known_at=c.timestamp("known_at", request.known_at, request.HasField("known_at")),
    )


@dataclass(frozen=True)
class ListRequest:
    """A validated ListMemories call."""

    scope: Scope
    filter: MemoryFilter
    include_invalidated: bool
    page_size: int
    after: Cursor | None
    view: ReadView
    include_shared: bool = False


def _page_size(c: Checker, asked: int) -> int:
    page_size = asked or DEFAULT_PAGE_SIZE
    if not 1 <= page_size <= MAX_PAGE_SIZE:
        c.bad("page_size", f"must be between 1 and {MAX_PAGE_SIZE} (0 means {DEFAULT_PAGE_SIZE})")
    return page_size


def _token(c: Checker, token: str, decode: Callable[[str], T], rpc: str) -> T | None:
    """The position a page token holds (None for the first page); a violation if it is not one of ``rpc``'s."""
    if not token:
        return None
    try:
        return decode(token)
    except BadPageTokenError:
        c.bad("page_token", f"is not a token from a previous {rpc} response")
        return None


def parse_list(request: svc.ListMemoriesRequest) -> ListRequest:
    """Validate a ListMemories request."""
    c = Checker()
    scope = c.scope("scope", request.scope, request.HasField("scope"))
    page_size = _page_size(c, request.page_size)
    after = _token(c, request.page_token, decode_cursor, "ListMemories")
    flt = _filter(c, request.filter)
    view = _view(c, request)
    c.done()
    return ListRequest(scope, flt, request.include_invalidated, page_size, after, view, request.include_shared)


def _scoped_id(
    c: Checker, request: svc.GetMemoryRequest | svc.InvalidateMemoryRequest | svc.ListLinksRequest
) -> tuple[Scope, UUID]:
    return c.scope("scope", request.scope, request.HasField("scope")), c.uuid("memory_id", request.memory_id)


def parse_scoped_id(request: svc.ListLinksRequest) -> tuple[Scope, UUID]:
    """Validate the scope and memory_id of a one-memory request."""
    c = Checker()
    scope, memory_id = _scoped_id(c, request)
    c.done()
    return scope, memory_id


def parse_get(request: svc.GetMemoryRequest) -> tuple[Scope, UUID, ReadView]:
    """Validate a GetMemory request."""
    c = Checker()
    scope, memory_id = _scoped_id(c, request)
    view = _view(c, request)
    c.done()
    return scope, memory_id, view


def parse_invalidate(request: svc.InvalidateMemoryRequest) -> tuple[Scope, UUID, datetime | None]:
    """Validate an InvalidateMemory request."""
    c = Checker()
    scope, memory_id = _scoped_id(c, request)
    invalid_at = c.when("invalid_at", request.invalid_at, request.HasField("invalid_at"),
                        "invalid_game_day", request.invalid_game_day, request.HasField("invalid_game_day"))
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
    valid_at = c.when("valid_at", request.valid_at, request.HasField("valid_at"),
                      "valid_game_day", request.valid_game_day, request.HasField("valid_game_day"))
    c.done()
    return UpdateRequest(scope, memory_id, importance, tier, metadata, content, valid_at)


@dataclass(frozen=True)
class HistoryRequest:
    """A validated GetMemoryHistory call: a subject (and slot), or one memory's chain."""

    scope: Scope
    subject_id: str
    slot: str | None
    memory_id: UUID | None
    view: ReadView
    page_size: int = DEFAULT_PAGE_SIZE
    after: HistoryCursor | None = None


def parse_history(request: svc.GetMemoryHistoryRequest) -> HistoryRequest:
    """Validate a GetMemoryHistory request."""
    c = Checker()
    scope = c.scope("scope", request.scope, request.HasField("scope"))
    memory_id = c.uuid("memory_id", request.memory_id) if request.memory_id else None
    if memory_id is None and not request.subject_id:
        c.bad("subject_id", "is required unless memory_id is given")
    c.text("subject_id", request.subject_id, max_chars=MAX_SUBJECT_ID, required=False)
    slot = c.slot("slot", request.slot)
    view = _view(c, request)
    page_size = _page_size(c, request.page_size)
    after = _token(c, request.page_token, decode_history_cursor, "GetMemoryHistory")
    c.done()
    return HistoryRequest(scope, request.subject_id, slot, memory_id, view, page_size, after)


def parse_forget(request: svc.ForgetPlayerRequest | svc.ListSavePointsRequest) -> str:
    """Validate the player of a ForgetPlayer or ListSavePoints request."""
    c = Checker()
    user_id = c.user_id("user_id", request.user_id)
    c.done()
    return user_id


def parse_expand(request: svc.ExpandMemoryRequest) -> tuple[Scope, UUID | None]:
    """Validate an ExpandMemory request; no memory_id means the scope's last expanded memory."""
    c = Checker()
    scope = c.scope("scope", request.scope, request.HasField("scope"))
    memory_id = c.uuid("memory_id", request.memory_id) if request.memory_id else None
    c.done()
    return scope, memory_id


def parse_save(request: svc.CreateSavePointRequest | svc.LoadSavePointRequest) -> tuple[str, str]:
    """Validate the player and save slot of a save or load."""
    c = Checker()
    user_id = c.user_id("user_id", request.user_id)
    save_id = c.text("save_id", request.save_id, max_chars=MAX_SAVE_ID)
    c.done()
    return user_id, save_id


def parse_drop(request: svc.DropTimelineRequest) -> tuple[str, int]:
    """Validate a DropTimeline request."""
    c = Checker()
    user_id = c.user_id("user_id", request.user_id)
    if request.timeline_id <= 0:
        c.bad("timeline_id", "must name a timeline (1 or more)")
    c.done()
    return user_id, request.timeline_id
