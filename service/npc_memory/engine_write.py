"""The store use case: embed and tokenise the facts, then write them in one transaction (store/writes.py).

A short request whose model call will run alone and leave a core idle is tokenised and sends the transaction's
lock and reads on that core while the model runs, so only the writes and COMMIT wait for the vectors; any other
request embeds, then tokenises, then writes. No SQL, no gRPC.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import numpy as np

from npc_memory.config import WriteConfig
from npc_memory.domain.errors import EmbeddingRequiredError, TextRefusedError, TextSource
from npc_memory.domain.model import NewMemory, PreparedMemory, Scope, StoreResult, Vector
from npc_memory.domain.write_rules import content_key, request_fingerprint
from npc_memory.embedding.base import Embedder
from npc_memory.engine_turns import turn_flags, turn_texts, with_answer
from npc_memory.errors import InputRejectedError
from npc_memory.ops.metrics import EMBED_SECONDS
from npc_memory.store import idempotency, writes
from npc_memory.store.pool import Database
from npc_memory.text import Tokenizer
from npc_memory.text.process_pool import AnalysisPool
from npc_memory.text.tokenize import Analysis


def utcnow() -> datetime:
    """The server's clock."""
    return datetime.now(UTC)


def retrieved(task: asyncio.Future[Any]) -> None:
    """Mark a side task's outcome as seen once another error is being reported (no "never retrieved" warning)."""
    if not task.cancelled():
        task.exception()


async def _first(made: asyncio.Future[tuple[list[Vector], list[Vector]]]) -> list[Vector]:
    """The facts' vectors of an ``_embed_passages`` call under way."""
    return (await made)[0]


NO_VECTOR: Vector = np.zeros(0, dtype=np.float32)
"""A prepared fact's vector while the model still makes it (``writes.store_memories`` puts the real one in)."""

INLINE_ANALYSIS_CHARS = 400
"""Facts left to analyse of at most this many characters in all are analysed on the event loop, not in a thread."""



class WritePath:
    """The engine's store path (``MemoryEngine`` holds the parts it names)."""

    db: Database
    embedder: Embedder
    tokenizer: Tokenizer
    write_settings: WriteConfig
    analysis_pool: AnalysisPool | None

    async def _embed_passages(
        self, facts: Sequence[NewMemory], source: TextSource, texts: Sequence[str] | None = None,
        extra: Sequence[str] = (),
    ) -> tuple[list[Vector], list[Vector]]:
        """The caller's vectors, and the embedder's for the rest (over ``texts`` when given, else the content).

        Second: vectors of ``extra`` texts, embedded in the same model call (a stored turn's new text).
        """
        missing = [i for i, f in enumerate(facts) if f.embedding is None]
        if missing and not self.embedder.available:
            raise EmbeddingRequiredError(missing[0])
        over = texts if texts is not None else [f.content for f in facts]
        wanted = [over[i] for i in missing] + list(extra)
        try:
            with EMBED_SECONDS.labels("passages").time():
                vectors = await self.embedder.embed_passages(wanted) if wanted else []
        except InputRejectedError as exc:
            raise TextRefusedError(source, missing if source == "memories" else (), exc.detail) from exc
        by_index = dict(zip(missing, vectors, strict=False))
        return ([f.embedding if f.embedding is not None else by_index[i] for i, f in enumerate(facts)],
                list(vectors[len(missing):]))

    def _prepare(
        self, fact: NewMemory, vector: Vector, now: datetime, analysis: Analysis | None = None
    ) -> PreparedMemory:
        analysis = analysis or self.tokenizer.analyse(fact.content)
        return PreparedMemory(
            id=uuid.uuid4(),
            fact=fact,
            valid_at=fact.valid_at or now,
            embedding=vector,
            embedding_model=self.embedder.name,
            terms=analysis.terms,
            content_key=content_key(fact.content),
            meaning=analysis.meaning,
        )

    async def store(
        self, scope: Scope, facts: Sequence[NewMemory], request_id: str = "", on_commit: writes.OnCommit | None = None
    ) -> list[StoreResult]:
        """Embed what needs it (one batch), then write all facts in one transaction; idempotent on request_id.

        ``on_commit`` joins the write transaction; with it, a repeated request_id is answered inside the
        transaction (so the hook runs on the replay too) rather than by the early check.
        """
        write = self.write_settings
        fingerprint = request_fingerprint(facts) if request_id else ""
        beside = self._writes_beside_model(facts)
        # A repeat skips the embedder; the write transaction checks the key again under its lock. A store whose
        # transaction goes out beside the model leaves it to the transaction: the check would cost a round trip.
        if request_id and on_commit is None and not beside:
            first = await idempotency.lookup(self.db, scope, request_id, fingerprint, write.idempotency_hours)
            if first is not None:
                return first
        now = utcnow()
        turns, stored = await turn_flags(self.db, write, scope, facts, now)
        texts, answered = await turn_texts(self.db, write, self.embedder.available, scope, facts, turns, now, stored)
        if beside and answered is None and self._writes_beside_model(facts):
            return await self._store_beside_model(scope, facts, texts, turns, now, request_id, fingerprint, on_commit)
        vectors, extra = await self._embed_passages(facts, "memories", texts, answered[1:] if answered else ())
        if answered is not None:
            on_commit = with_answer(self.embedder.name, scope, answered[0], extra[0], on_commit)
        # Kiwi and the per-token Python take ~30 ms per 2,000-character fact: a full batch on the event loop
        # stalled every other call (health checks included) for seconds. In a thread Kiwi still holds this
        # process's GIL, so a big batch is analysed in the worker processes and only assembled here, and a
        # short one (a line or two: ~0.8 ms of Kiwi) here on the loop, which the thread hop cost ~0.4 ms more.
        pool, texts = self.analysis_pool, [f.content for f in facts]
        analyses: list[Analysis | None] = (
            list(await pool.analyse(texts)) if pool is not None and pool.wants(texts) else [None] * len(facts)
        )
        def prepared() -> list[PreparedMemory]:
            return [replace(self._prepare(f, v, now, a), turn=t)
                    for f, v, a, t in zip(facts, vectors, analyses, turns, strict=True)]

        short = sum(len(t) for t, a in zip(texts, analyses, strict=True) if a is None) <= INLINE_ANALYSIS_CHARS
        items = prepared() if short else await asyncio.to_thread(prepared)
        return await writes.store_memories(
            self.db, scope, items, write.duplicate_threshold, request_id, fingerprint, write.idempotency_hours,
            on_commit,
        )

    def _writes_beside_model(self, facts: Sequence[NewMemory]) -> bool:
        """Whether a store's transaction should go out while its model call runs: when the call leaves a core idle.

        A short request (analysed on the loop) with text to embed, whose model call would run alone and still
        leave one of the machine's idle cores free (``threads`` below them): the facts are tokenised and the lock
        and reads sent on that core meanwhile. Not when the call takes every core: then even the reads beside it
        cost the store ~1 ms more than they saved (benchmarks.write, thirteenth session), as tokenising beside
        it did a search (benchmarks.beside_model). Nor when calls overlap: each queues for a core, and a
        transaction open meanwhile would hold a connection and the scope's lock while it waits.
        """
        return (any(f.embedding is None for f in facts) and self.embedder.available
                and sum(len(f.content) for f in facts) <= INLINE_ANALYSIS_CHARS and self.embedder.spares_a_core())

    async def _store_beside_model(
        self, scope: Scope, facts: Sequence[NewMemory], texts: Sequence[str] | None, turns: Sequence[bool],
        now: datetime, request_id: str, fingerprint: str, on_commit: writes.OnCommit | None,
    ) -> list[StoreResult]:
        """``store`` with the model's call beside the tokenising and the transaction's lock and reads (short requests).

        The transaction holds placeholders for the vectors it awaits after its reads.
        """
        vectors = asyncio.ensure_future(self._embed_passages(facts, "memories", texts))
        made = asyncio.ensure_future(_first(vectors))
        await asyncio.sleep(0)  # let the task hand the texts to the model's thread before tokenising here
        write = self.write_settings
        try:
            items = [replace(self._prepare(f, f.embedding if f.embedding is not None else NO_VECTOR, now), turn=t)
                     for f, t in zip(facts, turns, strict=True)]
            return await writes.store_memories(
                self.db, scope, items, write.duplicate_threshold, request_id, fingerprint, write.idempotency_hours,
                on_commit, made,
            )
        finally:
            # A replay or a failed transaction leaves the model's call unawaited: its outcome is not this call's.
            for task in (made, vectors):
                task.cancel()
                task.add_done_callback(retrieved)
