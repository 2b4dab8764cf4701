"""The use cases the API calls: embed and tokenise around the store, then score. No SQL, no gRPC."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from npc_memory.config import SearchConfig, WriteConfig
from npc_memory.domain import dialogue
from npc_memory.domain.context import ContextBlock, assemble
from npc_memory.domain.deepen import deepen_answer, deepen_tiers, enough_passed, passing
from npc_memory.domain.edit_rules import version_fact
from npc_memory.domain.errors import (
    ContentEditNeedsEmbedderError,
    EmbeddingRequiredError,
    TextRefusedError,
    TextSource,
)
from npc_memory.domain.links import Expansion, LinkView
from npc_memory.domain.model import (
    LIVE,
    AnalysedFact,
    Memory,
    MemoryFilter,
    NewMemory,
    PreparedMemory,
    ReadView,
    SavePoint,
    Scope,
    ScoredMemory,
    SearchQuery,
    StoreResult,
    Tier,
    Timeline,
    Vector,
)
from npc_memory.domain.paging import MAX_PAGE_BYTES, Cursor, HistoryCursor
from npc_memory.domain.write_rules import content_key, request_fingerprint
from npc_memory.embedding.base import Embedder
from npc_memory.errors import InputRejectedError, NotFoundError
from npc_memory.ops.metrics import CONTEXT_PROFILE, EMBED_SECONDS, HELD_ROWS, SEARCH_RANKED
from npc_memory.ops.tracing import span
from npc_memory.search.held import ScopeCache
from npc_memory.search.profile import held_profile
from npc_memory.search.rows import ScopeRows
from npc_memory.store import clock, context, idempotency, lifecycle, links, reads, search, timelines, writes
from npc_memory.store.keyword import ResolvedKeywordBackend
from npc_memory.store.pool import Database
from npc_memory.text import Tokenizer
from npc_memory.text.periods import period_in
from npc_memory.text.process_pool import AnalysisPool
from npc_memory.text.tokenize import Analysis

"""The keyword side a running engine uses; ``auto`` in the configuration is resolved to one of these at start."""


def utcnow() -> datetime:
    """The server's clock."""
    return datetime.now(UTC)


def _retrieved(task: asyncio.Future[Any]) -> None:
    """Mark a side task's outcome as seen once another error is being reported (no "never retrieved" warning)."""
    if not task.cancelled():
        task.exception()


@dataclass
class MemoryEngine:
    """Stores and searches memories with the configured embedder, tokenizer and database."""

    db: Database
    embedder: Embedder
    tokenizer: Tokenizer
    keyword_backend: ResolvedKeywordBackend
    write_settings: WriteConfig
    search_settings: SearchConfig
    analysis_pool: AnalysisPool | None = None
    """Worker processes for big batches' tokenising; None analyses every batch in a thread here."""
    scope_cache: ScopeCache | None = None
    """Scopes ranked in memory (search/held.py); None ranks every search with the statement."""

    async def _embed_passages(self, facts: Sequence[NewMemory], source: TextSource) -> list[Vector]:
        """The caller's vectors, and the embedder's for the rest (over their content: a fact is embedded alone)."""
        missing = [i for i, f in enumerate(facts) if f.embedding is None]
        if missing and not self.embedder.available:
            raise EmbeddingRequiredError(missing[0])
        wanted = [facts[i].content for i in missing]
        try:
            with EMBED_SECONDS.labels("passages").time(), span("embed", texts=len(wanted)):
                vectors = await self.embedder.embed_passages(wanted) if wanted else []
        except InputRejectedError as exc:
            raise TextRefusedError(source, missing if source == "memories" else (), exc.detail) from exc
        by_index = dict(zip(missing, vectors, strict=False))
        return [f.embedding if f.embedding is not None else by_index[i] for i, f in enumerate(facts)]

    def _analysed(self, fact: NewMemory, now: datetime, analysis: Analysis | None = None) -> AnalysedFact:
        analysis = analysis or self.tokenizer.analyse(fact.content)
        return AnalysedFact(uuid.uuid4(), fact, fact.valid_at or now, analysis.terms, content_key(fact.content),
                            analysis.meaning)

    def _prepare(self, fact: NewMemory, vector: Vector, now: datetime, analysis: Analysis | None = None,
                 ) -> PreparedMemory:
        return self._analysed(fact, now, analysis).embedded(vector, self.embedder.name)

    async def store(
        self, scope: Scope, facts: Sequence[NewMemory], request_id: str = "", on_commit: writes.OnCommit | None = None
    ) -> list[StoreResult]:
        """Analyse, embed (one batch), then plan and write all facts in one transaction; idempotent on request_id.

        One straight line: a repeated request_id is answered before any work; the texts are analysed
        (``_analyse``), the missing vectors made in one model call, and store/writes.py plans and writes the batch
        under the scope's lock. ``on_commit`` joins the write transaction; with it, a repeated request_id is
        answered inside the transaction (so the hook runs on the replay too) rather than by the early check.
        """
        write = self.write_settings
        fingerprint = request_fingerprint(facts) if request_id else ""
        if request_id and on_commit is None:
            first = await idempotency.lookup(self.db, scope, request_id, fingerprint, write.idempotency_hours)
            if first is not None:
                return first
        now = utcnow()
        analyses = await self._analyse([f.content for f in facts])
        vectors = await self._embed_passages(facts, "memories")
        items = [self._analysed(f, now, a).embedded(v, self.embedder.name)
                 for f, a, v in zip(facts, analyses, vectors, strict=True)]
        return await writes.store_memories(
            self.db, scope, items, write.duplicate_threshold, request_id, fingerprint, write.idempotency_hours,
            on_commit,
        )

    async def _analyse(self, texts: Sequence[str]) -> list[Analysis]:
        """Each text's terms and meaning signature, made off the event loop.

        Kiwi and the per-token Python are slow on long texts and hold the GIL: a batch the worker
        processes take (``tokenize_process_min_chars`` or more in all) is analysed there, in parallel and off this
        process's GIL; any other batch in one thread hop, so the loop still gets the GIL back every switch interval.
        """
        pool = self.analysis_pool
        if pool is not None and pool.wants(texts):
            return list(await pool.analyse(texts))
        return await asyncio.to_thread(lambda: [self.tokenizer.analyse(t) for t in texts])

    async def _embedded(self, query: SearchQuery) -> SearchQuery:
        if query.embedding is None and query.text and self.embedder.available:
            try:
                with EMBED_SECONDS.labels("query").time(), span("embed", texts=1):
                    (vector,) = await self.embedder.embed_queries([query.text])
            except InputRejectedError as exc:
                raise TextRefusedError("query", (), exc.detail) from exc
            query = replace(query, embedding=vector)
        return query

    def _keyword_terms(self, query: SearchQuery) -> list[str]:
        """The query's morphemes, or none when the keyword side cannot count (no text, or keyword weight 0)."""
        if not query.text or query.weights.keyword <= 0:
            return []
        return self.tokenizer.query_terms(query.text)

    async def search(
        self, query: SearchQuery, held: asyncio.Future[ScopeRows | None] | None = None
    ) -> list[ScoredMemory]:
        """Rank the scope's memories for the query: candidates gathered and scored in one SQL round trip.

        The model runs in a worker thread while this task syncs the held scope, tokenises the query and checks the
        timeline, so a text search costs the embedding plus the ranking, not plus the rest.
        ``held``: the scope's held rows already being synced for this query (``_sync_held``), if the caller started it.
        """
        needs_vector = query.embedding is None and bool(query.text) and self.embedder.available
        embedding = asyncio.ensure_future(self._embedded(query)) if needs_vector else None
        if held is None and (needs_vector or query.embedding is not None):
            held = self._sync_held(query)
        try:
            terms = self._keyword_terms(query)
            await self._check_view(query.scope.user_id, query.view)
            if embedding is not None:
                query = await embedding
        except BaseException:
            for task in (embedding, held):
                if task is not None:
                    task.cancel()
                    task.add_done_callback(_retrieved)  # this error is the one reported
            raise
        query = self.with_period(query)
        # A line said in many dialogues shows once (domain/dialogue.py). Not with hops: the linked rows follow the
        # ranked ones and are not cut (store/search_links.py).
        if query.hops:
            return await self._ranked(query, terms, held)
        asked = replace(query, limit=query.limit * dialogue.REPEAT_HEADROOM)
        return await self._ranked(asked, terms, held, query.limit)

    def _sync_held(self, query: SearchQuery) -> asyncio.Future[ScopeRows | None] | None:
        """The held scope's sync, started now (it needs only the scope, so it goes out while the model runs)."""
        cache = self.scope_cache
        if cache is None or not cache.takes(query, self.keyword_backend):
            return None
        return asyncio.ensure_future(cache.current(self.db, query.scope, query.include_shared))

    async def _ranked(
        self, query: SearchQuery, terms: Sequence[str], held: asyncio.Future[ScopeRows | None] | None = None,
        distinct: int = 0,
    ) -> list[ScoredMemory]:
        """The query's ranked hits: from the scope held in memory when it can answer, else from the statement.

        ``held``: the scope's rows, already being brought up to date (``ScopeCache.current``), if the caller
        started that. ``distinct``: the first this many hits whose texts differ (``dialogue.distinct_turns``), or 0:
        every hit. A held scope drops the repeats before it makes its hits; the statement's are collapsed here.
        """
        per_side = self.search_settings.candidates
        cache = self.scope_cache
        if cache is not None and (held is not None or cache.takes(query, self.keyword_backend)):
            hits = await cache.search(self.db, query, terms, per_side, held, distinct)
            HELD_ROWS.set(cache.rows)
            if hits is not None:
                SEARCH_RANKED.labels("held").inc()
                return hits
        SEARCH_RANKED.labels("statement").inc()
        hits = await search.search_ranked(self.db, query, terms, per_side, self.keyword_backend)
        return dialogue.distinct_turns(hits, distinct) if distinct else hits

    async def build_context(
        self, scope: Scope, utterance: str, budget: int, include_shared: bool, language: str, now: datetime,
        relevant_limit: int = 10, profile_limit: int = 200,
    ) -> ContextBlock:
        """The heroine's context block: profile rows and the utterance's search hits, assembled within budget.

        The utterance is embedded first, alone on the cores. A scope held in memory (search/held.py) is synced
        once, and both the search and the profile are taken from its rows; otherwise the profile read and the search
        statement run side by side on two connections, so a block costs the longer of the two reads, not their sum.
        """
        query = SearchQuery(
            scope=scope, text=utterance, limit=relevant_limit,
            weights=self.search_settings.weights_for(scope.heroine_id), now=now, include_shared=include_shared,
            recency_days=self.search_settings.recency_days_for(scope.heroine_id),
            turn_weights=self.search_settings.turn_weights_for(scope.heroine_id),
        )
        asked = bool(utterance.strip())
        if asked:
            query = await self._embedded(query)
        held = self._sync_held(query)
        search = asyncio.ensure_future(self.search(query, held)) if asked else None
        try:
            rows = await held if held is not None else None
            CONTEXT_PROFILE.labels("held" if rows is not None else "statement").inc()
            profile = (held_profile(rows, scope, now, profile_limit) if rows is not None
                       else await context.profile_rows(self.db, scope, now, include_shared, profile_limit))
            hits = await search if search is not None else []
        except BaseException:
            for task in (search, held):
                if task is not None:
                    task.cancel()
                    task.add_done_callback(_retrieved)  # the first error is the one reported
            raise
        return assemble(scope, profile, hits, budget, language)

    def with_period(self, query: SearchQuery) -> SearchQuery:
        """The period the query text names, unless the request asks for a past state (``as_of``)."""
        mode = self.search_settings.period_search
        if mode == "off" or query.as_of is not None or not query.text:
            return query
        found = period_in(query.text, query.now)
        if found is None:
            return query
        return replace(query, period=(found.start, found.end), period_first=mode == "first")

    async def search_deep(self, query: SearchQuery) -> tuple[list[ScoredMemory], Tier]:
        """A deepen search: gists, then knowledge, then sources, while too few results reach the threshold.

        One ranked search per tier searched; the answer is what passed in the shallower tiers, then the
        deepest tier's results, cut to ``limit``. Returns the deepest tier searched (the one that answered).
        """
        query = await self._embedded(query)
        terms = self.tokenizer.query_terms(query.text) if query.text else []
        passed: list[ScoredMemory] = []
        tiers = deepen_tiers(query.filter.tiers)
        for tier in tiers:
            tier_query = replace(query, filter=replace(query.filter, tiers=(tier,)))
            hits = await self._ranked(tier_query, terms)
            enough = enough_passed(passed, hits, query.deepen_min_relevance, query.limit)
            if enough or tier is tiers[-1]:
                return deepen_answer(passed, hits, query.limit), tier
            passed += passing(hits, query.deepen_min_relevance)
        raise AssertionError("deepen_tiers is never empty")

    async def hidden_by_clock(self, query: SearchQuery) -> int:
        """How many of the scope's current memories the search's time (``as_of``, else ``now``) is before."""
        return await clock.count_hidden_by_clock(self.db, query.scope, query.as_of or query.now, query.view)

    async def expand(self, scope: Scope, memory_id: UUID | None) -> Expansion:
        """One ExpandMemory step from ``memory_id`` (or the scope's last expanded memory)."""
        return await links.expand(self.db, scope, memory_id, self.search_settings.expand_per_depth, utcnow())

    async def links(self, scope: Scope, memory_id: UUID) -> LinkView:
        """A memory's parents, children and related memories."""
        return await links.links_of(self.db, scope, memory_id)

    async def _check_view(self, user_id: str, view: ReadView) -> None:
        """NotFoundError for a read of a timeline the player does not have."""
        if view.timeline_id is not None and not await timelines.timeline_exists(self.db, user_id, view.timeline_id):
            raise NotFoundError(f"no timeline {view.timeline_id} for this player")

    async def get(self, scope: Scope, memory_id: UUID, view: ReadView = LIVE) -> Memory:
        """One memory of the scope, as the view has it."""
        await self._check_view(scope.user_id, view)
        return await reads.get_memory(self.db, scope, memory_id, view)

    async def list_page(
        self, scope: Scope, flt: MemoryFilter, include_invalidated: bool, page_size: int, after: Cursor | None,
        view: ReadView = LIVE, include_shared: bool = False, max_bytes: int = MAX_PAGE_BYTES,
    ) -> tuple[list[Memory], Cursor | None]:
        """A page of the scope's memories (and the player's shared ones if asked), newest first."""
        await self._check_view(scope.user_id, view)
        return await reads.list_memories(
            self.db, scope, flt, include_invalidated, utcnow(), page_size, after, view, include_shared, max_bytes
        )

    async def invalidate(self, scope: Scope, memory_id: UUID, invalid_at: datetime | None) -> Memory:
        """Close a memory at ``invalid_at`` (default now)."""
        return await lifecycle.invalidate(self.db, scope, memory_id, invalid_at or utcnow())

    async def update(
        self, scope: Scope, memory_id: UUID, *, importance: int | None = None, tier: Tier | None = None,
        metadata: dict[str, Any] | None = None, content: str | None = None, valid_at: datetime | None = None,
    ) -> Memory:
        """Change fields in place; a new content versions the fact (re-embedded, re-tokenised)."""
        new_version = None
        if content is not None:
            current = await reads.get_memory(self.db, scope, memory_id)
            if not self.embedder.available:  # UpdateMemory carries no vector, so the server must make one
                raise ContentEditNeedsEmbedderError(memory_id)
            fact = version_fact(current, content, valid_at)
            (vector,) = await self._embed_passages([fact], "content")
            new_version = await asyncio.to_thread(self._prepare, fact, vector, utcnow())
        return await lifecycle.update(
            self.db, scope, memory_id, importance=importance,
            tier=tier.value if tier is not None else None, metadata=metadata, new_version=new_version,
        )

    async def history(
        self, scope: Scope, subject_id: str, slot: str | None, page_size: int, after: HistoryCursor | None,
        view: ReadView = LIVE, max_bytes: int = MAX_PAGE_BYTES,
    ) -> tuple[list[Memory], HistoryCursor | None]:
        """A page of a subject's or slot's rows over time, as the view has them, and the next page's cursor."""
        await self._check_view(scope.user_id, view)
        return await reads.history(self.db, scope, subject_id, slot, page_size, after, view, max_bytes)

    async def chain(
        self, scope: Scope, memory_id: UUID, page_size: int, after: HistoryCursor | None, view: ReadView = LIVE,
        max_bytes: int = MAX_PAGE_BYTES,
    ) -> tuple[list[Memory], HistoryCursor | None]:
        """A page of one memory's version chain, as the view has it, and the next page's cursor."""
        await self._check_view(scope.user_id, view)
        return await reads.chain(self.db, scope, memory_id, page_size, after, view, max_bytes)

    async def create_save_point(self, user_id: str, save_id: str) -> SavePoint:
        """Mark the player's memory in a save slot (every heroine at once)."""
        return await timelines.create_save_point(self.db, user_id, save_id)

    async def load_save_point(self, user_id: str, save_id: str) -> Timeline:
        """Branch the player's new live timeline from a save point."""
        return await timelines.load_save_point(self.db, user_id, save_id)

    async def list_save_points(self, user_id: str) -> tuple[list[SavePoint], list[Timeline], int]:
        """The player's save points, timelines and live timeline."""
        return await timelines.list_save_points(self.db, user_id)

    async def drop_timeline(self, user_id: str, timeline_id: int) -> int:
        """Erase an abandoned timeline and its branches."""
        return await timelines.drop_timeline(self.db, user_id, timeline_id)

    async def forget_player(self, user_id: str) -> int:
        """Erase a player everywhere (and from this process's held scopes)."""
        erased = await lifecycle.forget_player(self.db, user_id)
        if self.scope_cache is not None:
            self.scope_cache.forget(user_id)
        return erased
