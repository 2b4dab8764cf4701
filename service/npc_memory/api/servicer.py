"""The MemoryService servicer: parse, call the engine, convert. Nothing else."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
from npc_memory_client.v1 import context_pb2 as ctx_pb
from npc_memory_client.v1 import extraction_pb2 as ex_pb
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc

from npc_memory.api import context, convert, dialogue_requests, enums, extraction_requests, requests
from npc_memory.api.errors import handle_errors
from npc_memory.domain.paging import encode_cursor, encode_history_cursor
from npc_memory.engine import MemoryEngine
from npc_memory.engine.dialogue import store_dialogue
from npc_memory.errors import FailedPreconditionError
from npc_memory.extraction.service import Extractor

Ctx = grpc.aio.ServicerContext

INLINE_PARSE_FACTS = 8
"""Store requests of at most this many facts are checked on the event loop (~60 us a fact), larger ones in a thread."""


class MemoryServicer(svc_grpc.MemoryServiceServicer):
    """npc_memory.v1.MemoryService over a MemoryEngine."""

    def __init__(self, engine: MemoryEngine, extractor: Extractor | None = None) -> None:
        self._engine = engine
        self._dim = engine.embedder.dim
        self._extractor = extractor

    def _extraction(self) -> Extractor:
        if self._extractor is None:
            raise FailedPreconditionError("extraction is not configured on this server (extraction_url is empty)")
        return self._extractor

    @handle_errors
    async def StoreMemories(  # noqa: N802  (gRPC method names are fixed by the proto)
        self, request: svc.StoreMemoriesRequest, context: Ctx[Any, Any]
    ) -> svc.StoreMemoriesResponse:
        """Store a batch of facts atomically."""
        # Checking a full batch (text, metadata, vectors) is enough Python to hold up other calls: in a thread, not on
        # the event loop. A few facts cost less than the two thread hand-overs, so they are checked here.
        settings = self._engine.write_settings
        parsed = (requests.parse_store(request, settings, self._dim) if len(request.memories) <= INLINE_PARSE_FACTS
                  else await asyncio.to_thread(requests.parse_store, request, settings, self._dim))
        results = await self._engine.store(parsed.scope, parsed.facts, parsed.request_id)
        return svc.StoreMemoriesResponse(results=[convert.store_result(r) for r in results])

    @handle_errors
    async def StoreDialogue(  # noqa: N802
        self, request: svc.StoreDialogueRequest, context: Ctx[Any, Any]
    ) -> svc.StoreDialogueResponse:
        """Store a stated dialogue's turns atomically (and queue its extraction when asked)."""
        parsed = dialogue_requests.parse_store_dialogue(request, self._engine.write_settings)
        if parsed.extract:
            self._extraction()  # refused before anything is written when extraction is not configured
        results, job = await store_dialogue(self._engine, parsed.scope, parsed.dialogue, parsed.extract)
        response = svc.StoreDialogueResponse(turns=[convert.store_result(r) for r in results])
        if job is not None:
            response.job.CopyFrom(convert.extraction_job(job))
        return response

    @handle_errors
    async def SearchMemories(  # noqa: N802
        self, request: svc.SearchMemoriesRequest, context: Ctx[Any, Any]
    ) -> svc.SearchMemoriesResponse:
        """Rank the scope's memories for a query."""
        query = requests.parse_search(request, self._engine.search_settings, self._dim)
        tier = None
        if query.deepen:
            hits, tier = await self._engine.search_deep(query)
        else:
            hits = await self._engine.search(query)
        response = svc.SearchMemoriesResponse(
            embedding_model=self._engine.embedder.name,
            answered_tier=enums.TIER_NUMBERS[tier] if tier else pb.TIER_UNSPECIFIED,
        )
        for hit in hits:
            convert.fill_scored(response.results.add(), hit, query.scope)
        if any(request.HasField(f) for f in ("as_of", "now", "as_of_game_day", "now_game_day")):
            # Only a search that set its clock pays for the count: the wall clock hides only future-dated facts.
            response.hidden_by_clock = await self._engine.hidden_by_clock(query)
        return response

    @handle_errors
    async def GetMemory(  # noqa: N802
        self, request: svc.GetMemoryRequest, context: Ctx[Any, Any]
    ) -> svc.GetMemoryResponse:
        """One memory of the scope."""
        scope, memory_id, view = requests.parse_get(request)
        return svc.GetMemoryResponse(memory=convert.memory(await self._engine.get(scope, memory_id, view)))

    @handle_errors
    async def ListMemories(  # noqa: N802
        self, request: svc.ListMemoriesRequest, context: Ctx[Any, Any]
    ) -> svc.ListMemoriesResponse:
        """A page of the scope's memories."""
        parsed = requests.parse_list(request)
        memories, cursor = await self._engine.list_page(
            parsed.scope, parsed.filter, parsed.include_invalidated, parsed.page_size, parsed.after, parsed.view,
            parsed.include_shared,
        )
        response = svc.ListMemoriesResponse(next_page_token=encode_cursor(cursor) if cursor else "")
        for m in memories:
            convert.fill_memory(response.memories.add(), m, parsed.scope)
        return response

    @handle_errors
    async def InvalidateMemory(  # noqa: N802
        self, request: svc.InvalidateMemoryRequest, context: Ctx[Any, Any]
    ) -> svc.InvalidateMemoryResponse:
        """Close a memory in business time."""
        scope, memory_id, invalid_at = requests.parse_invalidate(request)
        memory = await self._engine.invalidate(scope, memory_id, invalid_at)
        return svc.InvalidateMemoryResponse(memory=convert.memory(memory))

    @handle_errors
    async def UpdateMemory(  # noqa: N802
        self, request: svc.UpdateMemoryRequest, context: Ctx[Any, Any]
    ) -> svc.UpdateMemoryResponse:
        """Change fields in place or version the content."""
        p = requests.parse_update(request, self._engine.write_settings)
        memory = await self._engine.update(
            p.scope, p.memory_id, importance=p.importance, tier=p.tier, metadata=p.metadata,
            content=p.content, valid_at=p.valid_at,
        )
        return svc.UpdateMemoryResponse(memory=convert.memory(memory))

    @handle_errors
    async def GetMemoryHistory(  # noqa: N802
        self, request: svc.GetMemoryHistoryRequest, context: Ctx[Any, Any]
    ) -> svc.GetMemoryHistoryResponse:
        """A slot's, a subject's or a memory's rows over time."""
        p = requests.parse_history(request)
        if p.memory_id is not None:
            rows, cursor = await self._engine.chain(p.scope, p.memory_id, p.page_size, p.after, p.view)
        else:
            rows, cursor = await self._engine.history(p.scope, p.subject_id, p.slot, p.page_size, p.after, p.view)
        response = svc.GetMemoryHistoryResponse(next_page_token=encode_history_cursor(cursor) if cursor else "")
        for m in rows:
            convert.fill_memory(response.memories.add(), m)
        return response

    @handle_errors
    async def ForgetPlayer(  # noqa: N802
        self, request: svc.ForgetPlayerRequest, context: Ctx[Any, Any]
    ) -> svc.ForgetPlayerResponse:
        """Erase a player's rows across heroines."""
        user_id = requests.parse_forget(request)
        return svc.ForgetPlayerResponse(deleted_memories=await self._engine.forget_player(user_id))

    @handle_errors
    async def ExtractMemories(  # noqa: N802
        self, request: ex_pb.ExtractMemoriesRequest, context: Ctx[Any, Any]
    ) -> ex_pb.ExtractMemoriesResponse:
        """Queue a dialogue for extraction (once per dialogue id); in sync mode run an attempt first."""
        p = extraction_requests.parse_extract(request)
        extractor = self._extraction()
        job = await extractor.submit(p.scope, p.dialogue_id, p.turns)
        if p.sync:
            job = await extractor.run_now(job)
        return ex_pb.ExtractMemoriesResponse(job=convert.extraction_job(job))

    @handle_errors
    async def GetExtractionJob(  # noqa: N802
        self, request: ex_pb.GetExtractionJobRequest, context: Ctx[Any, Any]
    ) -> ex_pb.GetExtractionJobResponse:
        """An extraction job of the player."""
        user_id, job_id = extraction_requests.parse_get_job(request)
        job = await self._extraction().get(user_id, job_id)
        return ex_pb.GetExtractionJobResponse(job=convert.extraction_job(job))

    @handle_errors
    async def BuildContext(  # noqa: N802
        self, request: ctx_pb.BuildContextRequest, context_: Ctx[Any, Any]
    ) -> ctx_pb.BuildContextResponse:
        """The heroine's prompt block within a token budget."""
        p = context.parse_context(request)
        block = await self._engine.build_context(p.scope, p.utterance, p.budget, p.include_shared, p.language, p.now)
        return context.context_block(block, p.scope)

    @handle_errors
    async def ExpandMemory(  # noqa: N802
        self, request: svc.ExpandMemoryRequest, context: Ctx[Any, Any]
    ) -> svc.ExpandMemoryResponse:
        """One depth further from a memory."""
        scope, memory_id = requests.parse_expand(request)
        return convert.expansion(await self._engine.expand(scope, memory_id))

    @handle_errors
    async def ListLinks(  # noqa: N802
        self, request: svc.ListLinksRequest, context: Ctx[Any, Any]
    ) -> svc.ListLinksResponse:
        """A memory's parents, children and related memories."""
        scope, memory_id = requests.parse_scoped_id(request)
        return convert.link_view(await self._engine.links(scope, memory_id))

    @handle_errors
    async def CreateSavePoint(  # noqa: N802
        self, request: svc.CreateSavePointRequest, context: Ctx[Any, Any]
    ) -> svc.CreateSavePointResponse:
        """Mark the player's memory in a save slot."""
        user_id, save_id = requests.parse_save(request)
        save = await self._engine.create_save_point(user_id, save_id)
        return svc.CreateSavePointResponse(save_point=convert.save_point(save))

    @handle_errors
    async def LoadSavePoint(  # noqa: N802
        self, request: svc.LoadSavePointRequest, context: Ctx[Any, Any]
    ) -> svc.LoadSavePointResponse:
        """Branch a new live timeline from a save point."""
        user_id, save_id = requests.parse_save(request)
        timeline = await self._engine.load_save_point(user_id, save_id)
        return svc.LoadSavePointResponse(timeline=convert.timeline(timeline))

    @handle_errors
    async def ListSavePoints(  # noqa: N802
        self, request: svc.ListSavePointsRequest, context: Ctx[Any, Any]
    ) -> svc.ListSavePointsResponse:
        """The player's save points and timelines."""
        saves, lines, live = await self._engine.list_save_points(requests.parse_forget(request))
        return svc.ListSavePointsResponse(
            save_points=[convert.save_point(s) for s in saves], timelines=[convert.timeline(t) for t in lines],
            live_timeline_id=live,
        )

    @handle_errors
    async def DropTimeline(  # noqa: N802
        self, request: svc.DropTimelineRequest, context: Ctx[Any, Any]
    ) -> svc.DropTimelineResponse:
        """Erase an abandoned timeline."""
        user_id, timeline_id = requests.parse_drop(request)
        return svc.DropTimelineResponse(deleted_memories=await self._engine.drop_timeline(user_id, timeline_id))
