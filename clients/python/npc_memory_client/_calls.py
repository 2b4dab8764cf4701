"""Each RPC as a value: method name, request, response parser and whether a retry is safe.

The sync and async clients only differ in how they run a Call, so each RPC is described once here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar
from uuid import UUID

from google.protobuf.message import Message

from npc_memory_client import _requests as rq
from npc_memory_client import _results as rs
from npc_memory_client import extraction as ex
from npc_memory_client._shapes import known_options
from npc_memory_client.inputs import Facts, HistoryOptions, ListOptions, SearchOptions, UpdateOptions, ViewOptions
from npc_memory_client.model import (
    Expansion,
    LinkView,
    Memory,
    SavePoint,
    SaveState,
    StoreResult,
    Timeline,
)
from npc_memory_client.v1 import memory_service_pb2 as svc

T = TypeVar("T")


@dataclass(frozen=True)
class Call(Generic[T]):
    """One RPC ready to send."""

    method: str
    """The stub attribute, e.g. ``SearchMemories``."""
    request: Message
    parse: Callable[[Any], T]
    idempotent: bool
    """Safe to send again after UNAVAILABLE (the server may have acted on the first try)."""


def store(
    user_id: str, heroine_id: str, facts: Facts, request_id: str | None
) -> Call[list[StoreResult]]:
    """StoreMemories; retried only with a request_id, which makes a repeat return the first answer."""
    return Call(
        "StoreMemories", rq.store(user_id, heroine_id, facts, request_id),
        lambda r: [rs.store_result(x) for x in r.results], idempotent=bool(request_id),
    )


def search(user_id: str, heroine_id: str, query: str, opts: SearchOptions) -> Call[rs.SearchHits]:
    """SearchMemories, best first, with the count its clock hid."""
    known_options(opts, SearchOptions, "search")
    return Call("SearchMemories", rq.search(user_id, heroine_id, query, opts), rs.search_hits, idempotent=True)


def get(user_id: str, heroine_id: str, memory_id: UUID | str, view: ViewOptions) -> Call[Memory]:
    """GetMemory."""
    known_options(view, ViewOptions, "get")
    request = svc.GetMemoryRequest(scope=rq.scope(user_id, heroine_id), memory_id=str(memory_id))
    rq.read_view(request, view)
    return Call("GetMemory", request, lambda r: rs.memory(r.memory), idempotent=True)


def list_page(user_id: str, heroine_id: str, opts: ListOptions) -> Call[rs.MemoryPage]:
    """ListMemories, one page."""
    known_options(opts, ListOptions, "list_memories")
    return Call(
        "ListMemories", rq.list_page(user_id, heroine_id, opts),
        lambda r: rs.MemoryPage([rs.memory(m) for m in r.memories], r.next_page_token), idempotent=True,
    )


def invalidate(
    user_id: str, heroine_id: str, memory_id: UUID | str, invalid_at: datetime | None, invalid_game_day: float | None
) -> Call[Memory]:
    """InvalidateMemory."""
    request = svc.InvalidateMemoryRequest(scope=rq.scope(user_id, heroine_id), memory_id=str(memory_id))
    if invalid_at is not None:
        request.invalid_at.CopyFrom(rq.timestamp(invalid_at))
    if invalid_game_day is not None:
        request.invalid_game_day.CopyFrom(rq.game_time(invalid_game_day))
    return Call("InvalidateMemory", request, lambda r: rs.memory(r.memory), idempotent=False)


def update(user_id: str, heroine_id: str, memory_id: UUID | str, opts: UpdateOptions) -> Call[Memory]:
    """UpdateMemory; the current row comes back."""
    known_options(opts, UpdateOptions, "update")
    return Call(
        "UpdateMemory", rq.update(user_id, heroine_id, str(memory_id), opts), lambda r: rs.memory(r.memory),
        idempotent=False,
    )


def history(user_id: str, heroine_id: str, opts: HistoryOptions) -> Call[rs.MemoryPage]:
    """GetMemoryHistory, one page, ordered by valid_at."""
    known_options(opts, HistoryOptions, "history")
    return Call(
        "GetMemoryHistory", rq.history(user_id, heroine_id, opts),
        lambda r: rs.MemoryPage([rs.memory(m) for m in r.memories], r.next_page_token), idempotent=True,
    )


def forget_player(user_id: str) -> Call[int]:
    """ForgetPlayer; the number of erased rows."""
    return Call(
        "ForgetPlayer", svc.ForgetPlayerRequest(user_id=user_id), lambda r: int(r.deleted_memories), idempotent=False
    )


def expand(user_id: str, heroine_id: str, memory_id: UUID | str | None) -> Call[Expansion]:
    """ExpandMemory: one depth further; no memory_id continues the scope's last expansion."""
    request = svc.ExpandMemoryRequest(scope=rq.scope(user_id, heroine_id), memory_id=str(memory_id or ""))
    return Call("ExpandMemory", request, rs.expansion, idempotent=False)


def links(user_id: str, heroine_id: str, memory_id: UUID | str) -> Call[LinkView]:
    """ListLinks: a memory's parents, children and related memories."""
    request = svc.ListLinksRequest(scope=rq.scope(user_id, heroine_id), memory_id=str(memory_id))
    return Call("ListLinks", request, rs.link_view, idempotent=True)

def create_save_point(user_id: str, save_id: str) -> Call[SavePoint]:
    """CreateSavePoint; saving to the same slot again overwrites it, so a retry is safe."""
    return Call(
        "CreateSavePoint", svc.CreateSavePointRequest(user_id=user_id, save_id=save_id),
        lambda r: rs.save_point(r.save_point), idempotent=True,
    )


def load_save_point(user_id: str, save_id: str) -> Call[Timeline]:
    """LoadSavePoint; the new live timeline (a retry would branch again, so none)."""
    return Call(
        "LoadSavePoint", svc.LoadSavePointRequest(user_id=user_id, save_id=save_id),
        lambda r: rs.timeline(r.timeline), idempotent=False,
    )


def list_save_points(user_id: str) -> Call[SaveState]:
    """ListSavePoints."""
    return Call("ListSavePoints", svc.ListSavePointsRequest(user_id=user_id), rs.save_state, idempotent=True)


def drop_timeline(user_id: str, timeline_id: int) -> Call[int]:
    """DropTimeline; the number of erased rows."""
    return Call(
        "DropTimeline", svc.DropTimelineRequest(user_id=user_id, timeline_id=timeline_id),
        lambda r: int(r.deleted_memories), idempotent=False,
    )
def extract(
    user_id: str, heroine_id: str, dialogue_id: str, turns: ex.Turns, wait: bool
) -> Call[ex.ExtractionJob]:
    """ExtractMemories; safe to repeat (one job per dialogue id)."""
    return Call("ExtractMemories", ex.extract_request(user_id, heroine_id, dialogue_id, turns, wait),
                lambda r: ex.job(r.job), idempotent=True)


def store_dialogue(
    user_id: str, heroine_id: str, dialogue_id: str, turns: ex.Turns, first_position: int, extract: bool,
) -> Call[ex.StoredDialogue]:
    """StoreDialogue; safe to repeat (a turn resent at its place is the stored turn, one job per dialogue)."""
    return Call("StoreDialogue", ex.store_dialogue_request(user_id, heroine_id, dialogue_id, turns, first_position,
                                                           extract), ex.stored_dialogue, idempotent=True)


def extraction_job(user_id: str, job_id: UUID | str) -> Call[ex.ExtractionJob]:
    """GetExtractionJob."""
    return Call("GetExtractionJob", ex.job_request(user_id, job_id),
                lambda r: ex.job(r.job), idempotent=True)


def build_context(
    user_id: str, heroine_id: str, utterance: str, opts: ex.ContextOptions
) -> Call[ex.ContextBlock]:
    """BuildContext."""
    known_options(opts, ex.ContextOptions, "build_context")
    return Call("BuildContext", ex.context_request(
        user_id, heroine_id, utterance, opts.get("token_budget", 0), opts.get("include_shared", False),
        opts.get("language", ""), opts.get("now"),
    ), ex.block, idempotent=True)
