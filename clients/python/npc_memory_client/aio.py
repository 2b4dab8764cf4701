"""The asyncio client (grpc.aio)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, TypeVar, Unpack
from uuid import UUID

import grpc

from npc_memory_client import _calls
from npc_memory_client._results import MemoryPage, SearchHits
from npc_memory_client.errors import DeadlineExceededError, from_rpc_error
from npc_memory_client.extraction import ContextBlock, ContextOptions, ExtractionJob, StoredDialogue, Turns
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
from npc_memory_client.retry import RetryPolicy, next_pause
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc

T = TypeVar("T")


class AsyncClient:
    """An asyncio npc-memory client: plain values in, typed values out, typed exceptions.

    ``timeout`` is the default deadline of a call in seconds, retries included. Search, Get, List and
    History are retried on UNAVAILABLE; Store only when it has a ``request_id``.
    """

    def __init__(
        self,
        target: str,
        *,
        timeout: float = 5.0,
        retry: RetryPolicy | None = None,
        credentials: grpc.ChannelCredentials | None = None,
        options: Sequence[tuple[str, Any]] = (),
        metadata: Sequence[tuple[str, str]] = (),
    ) -> None:
        if credentials is None:
            self._channel = grpc.aio.insecure_channel(target, options)
        else:
            self._channel = grpc.aio.secure_channel(target, credentials, options)
        self._stub = svc_grpc.MemoryServiceStub(self._channel)
        self._timeout = timeout
        self._retry = retry or RetryPolicy()
        self._metadata = tuple(metadata)

    async def close(self) -> None:
        """Close the channel."""
        await self._channel.close()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def _run(self, call: _calls.Call[T], timeout: float | None) -> T:
        deadline = time.monotonic() + (self._timeout if timeout is None else timeout)
        method = getattr(self._stub, call.method)
        attempt = 0
        while True:
            attempt += 1
            left = deadline - time.monotonic()
            if left <= 0:
                raise DeadlineExceededError("deadline passed before the call could be sent")
            try:
                return call.parse(await method(call.request, timeout=left, metadata=self._metadata))
            except grpc.RpcError as exc:
                error = from_rpc_error(exc)
                pause = next_pause(self._retry, attempt, error.code, call.idempotent, deadline - time.monotonic())
                if pause is None:
                    raise error from exc
            await asyncio.sleep(pause)

    async def store(
        self, user_id: str, heroine_id: str, facts: Facts, *, request_id: str | None = None,
        timeout: float | None = None,
    ) -> list[StoreResult]:
        """Store one fact or text, or a list of them, atomically; one result per fact, in order."""
        return await self._run(_calls.store(user_id, heroine_id, facts, request_id), timeout)

    async def search(
        self, user_id: str, heroine_id: str, query: str, *, timeout: float | None = None, **opts: Unpack[SearchOptions]
    ) -> SearchHits:
        """The scope's memories ranked for ``query``, best first, each with its scores; ``.hidden_by_clock`` too."""
        return await self._run(_calls.search(user_id, heroine_id, query, opts), timeout)

    async def get(
        self, user_id: str, heroine_id: str, memory_id: UUID | str, *, timeout: float | None = None,
        **view: Unpack[ViewOptions],
    ) -> Memory:
        """One memory of the scope, valid or not (on a timeline as known at a time, if given)."""
        return await self._run(_calls.get(user_id, heroine_id, memory_id, view), timeout)

    async def list_memories(
        self, user_id: str, heroine_id: str, *, timeout: float | None = None, **opts: Unpack[ListOptions]
    ) -> MemoryPage:
        """One page of the scope's memories, newest first."""
        return await self._run(_calls.list_page(user_id, heroine_id, opts), timeout)

    async def invalidate(
        self, user_id: str, heroine_id: str, memory_id: UUID | str, *, invalid_at: datetime | None = None,
        invalid_game_day: float | None = None, timeout: float | None = None,
    ) -> Memory:
        """Close a memory at ``invalid_at`` or a game day (default now); it stays as history."""
        return await self._run(_calls.invalidate(user_id, heroine_id, memory_id, invalid_at, invalid_game_day), timeout)

    async def update(
        self, user_id: str, heroine_id: str, memory_id: UUID | str, *, timeout: float | None = None,
        **changes: Unpack[UpdateOptions],
    ) -> Memory:
        """Change the given fields; a content change versions the fact. Returns the current row."""
        return await self._run(_calls.update(user_id, heroine_id, memory_id, changes), timeout)

    async def history(
        self, user_id: str, heroine_id: str, *, timeout: float | None = None, **which: Unpack[HistoryOptions]
    ) -> MemoryPage:
        """One page of a subject's (or slot's, or one memory's chain of) rows over time, by valid_at."""
        return await self._run(_calls.history(user_id, heroine_id, which), timeout)

    async def forget_player(self, user_id: str, *, timeout: float | None = None) -> int:
        """Erase every row of a player across heroines; the number erased."""
        return await self._run(_calls.forget_player(user_id), timeout)

    async def expand(
        self, user_id: str, heroine_id: str, memory_id: UUID | str | None = None, *, timeout: float | None = None
    ) -> Expansion:
        """Go one depth further from a memory (default: the scope's last expanded one), linking what it finds."""
        return await self._run(_calls.expand(user_id, heroine_id, memory_id), timeout)

    async def links(
        self, user_id: str, heroine_id: str, memory_id: UUID | str, *, timeout: float | None = None
    ) -> LinkView:
        """A memory's parents, children and related memories."""
        return await self._run(_calls.links(user_id, heroine_id, memory_id), timeout)

    async def create_save_point(self, user_id: str, save_id: str, *, timeout: float | None = None) -> SavePoint:
        """Mark the player's memory (every heroine) in a save slot; copies nothing."""
        return await self._run(_calls.create_save_point(user_id, save_id), timeout)

    async def load_save_point(self, user_id: str, save_id: str, *, timeout: float | None = None) -> Timeline:
        """From now on the player's memory is as it was at the save, on a new live timeline."""
        return await self._run(_calls.load_save_point(user_id, save_id), timeout)

    async def list_save_points(self, user_id: str, *, timeout: float | None = None) -> SaveState:
        """The player's save points, timelines and live timeline."""
        return await self._run(_calls.list_save_points(user_id), timeout)

    async def drop_timeline(self, user_id: str, timeline_id: int, *, timeout: float | None = None) -> int:
        """Erase an abandoned timeline (and its branches); the number of rows erased."""
        return await self._run(_calls.drop_timeline(user_id, timeline_id), timeout)
    async def extract(
        self, user_id: str, heroine_id: str, dialogue_id: str, turns: Turns, *, wait: bool = False,
        timeout: float | None = None,
    ) -> ExtractionJob:
        """Queue a dialogue for extraction (one job per dialogue id); ``wait`` runs one attempt first."""
        return await self._run(_calls.extract(user_id, heroine_id, dialogue_id, turns, wait), timeout)

    async def store_dialogue(
        self, user_id: str, heroine_id: str, dialogue_id: str, turns: Turns, *, first_position: int = 0,
        extract: bool = False, timeout: float | None = None,
    ) -> StoredDialogue:
        """Store a dialogue's turns (sources, each embedded with its context, linked in order); one result per turn.

        ``first_position``: where in the dialogue the first of ``turns`` goes (a game streaming lines sends how many
        it sent before); resending a turn at its place returns the stored one. ``extract``: also queue the dialogue's
        extraction job (its facts link to the turns). A bare string is a line of the player.
        """
        return await self._run(_calls.store_dialogue(user_id, heroine_id, dialogue_id, turns, first_position, extract),
                                   timeout)

    async def extraction_job(self, user_id: str, job_id: UUID | str, *, timeout: float | None = None) -> ExtractionJob:
        """An extraction job of the player: state, attempts, error, memories written, facts rejected."""
        return await self._run(_calls.extraction_job(user_id, job_id), timeout)

    async def build_context(
        self, user_id: str, heroine_id: str, utterance: str = "", *, timeout: float | None = None,
        **opts: Unpack[ContextOptions],
    ) -> ContextBlock:
        """The heroine's prompt block within a token budget, structured and rendered."""
        return await self._run(_calls.build_context(user_id, heroine_id, utterance, opts), timeout)
