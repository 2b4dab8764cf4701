"""A lone short store's order: the write transaction's first round trip goes out while the model makes the vectors.

Measured on two cores (docs/write-path.md, "The reads beside the model"): on uvloop the round trip beside a lone
model call took ~1 ms off a store and did not slow the call; on the standard loop it slowed the call as much as it
saved. When calls overlap, a call could wait in line for a core, and the scope's lock and a pooled connection would
wait with it: those stores embed first, then write.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from npc_memory.config import WriteConfig
from npc_memory.domain.model import AnalysedFact, NewMemory, PreparedMemory, Scope, StoreResult, Vector
from npc_memory.embedding.base import Embedder
from npc_memory.ops.loop import on_uvloop
from npc_memory.store import writes
from npc_memory.store.pool import Database
from npc_memory.text import Tokenizer
from npc_memory.text.tokenize import Analysis

INLINE_ANALYSIS_CHARS = 400
"""Facts left to analyse of at most this many characters in all are analysed on the event loop, not in a thread.

Only such a batch reads beside the model: it is tokenised before the model starts.
"""


class EarlyAnalyses:
    """A short batch's analyses (Kiwi: ~0.7-1.3 ms a line), made once, when first asked."""

    def __init__(self, tokenizer: Tokenizer, texts: Sequence[str]) -> None:
        self._tokenizer, self._texts = tokenizer, texts
        self._made: list[Analysis] | None = None

    def __call__(self) -> list[Analysis]:
        """The texts' analyses, in order (made on the first call)."""
        if self._made is None:
            self._made = [self._tokenizer.analyse(t) for t in self._texts]
        return self._made


def early_analyses(tokenizer: Tokenizer, texts: Sequence[str]) -> EarlyAnalyses | None:
    """The analyses of a batch short enough for the event loop (the caller leaves out one bound for the workers)."""
    return EarlyAnalyses(tokenizer, texts) if sum(map(len, texts)) <= INLINE_ANALYSIS_CHARS else None


def reads_beside_model(embedder: Embedder, facts: Sequence[NewMemory]) -> bool:
    """Whether a store should read under its lock while the model runs: a short batch, the model's only call."""
    return (any(f.embedding is None for f in facts) and sum(len(f.content) for f in facts) <= INLINE_ANALYSIS_CHARS
            and on_uvloop() and embedder.runs_wide())


async def store_beside_model(
    db: Database, write: WriteConfig, model: str, scope: Scope, analysed: Sequence[AnalysedFact],
    vectors: asyncio.Future[list[Vector]], request_id: str, fingerprint: str,
    on_commit: writes.OnCommit | None,
) -> list[StoreResult]:
    """Write ``analysed`` (tokenised, in request order) once ``vectors`` (the model's call, running) are made."""

    async def complete() -> list[PreparedMemory]:
        made = await vectors
        return [a.embedded(v, model) for a, v in zip(analysed, made, strict=True)]

    try:
        return await writes.store_memories(
            db, scope, writes.Pending(analysed, complete), write.duplicate_threshold, request_id, fingerprint,
            write.idempotency_hours, on_commit,
        )
    finally:
        vectors.cancel()  # a replay answered without the vectors (or the write failed): nobody waits for them
