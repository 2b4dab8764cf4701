"""An LRU of query vectors: a heroine's repeated questions skip the model."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

from npc_memory.domain.model import Vector
from npc_memory.embedding.base import Embedder


class QueryCache:
    """Wraps an embedder; caches ``embed_queries`` results by text, passes everything else through."""

    def __init__(self, inner: Embedder, size: int) -> None:
        self._inner = inner
        self._size = size
        self._cache: OrderedDict[str, Vector] = OrderedDict()

    @property
    def name(self) -> str:
        """The inner embedder's name."""
        return self._inner.name

    @property
    def dim(self) -> int:
        """The inner embedder's size."""
        return self._inner.dim

    @property
    def available(self) -> bool:
        """Whether the inner embedder can embed."""
        return self._inner.available

    async def embed_queries(self, texts: Sequence[str]) -> list[Vector]:
        """Cached vectors where known; the rest embedded in one call and remembered."""
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            for text, vector in zip(missing, await self._inner.embed_queries(missing), strict=True):
                vector.setflags(write=False)
                self._cache[text] = vector
                if len(self._cache) > self._size:
                    self._cache.popitem(last=False)
        out = []
        for text in texts:
            self._cache.move_to_end(text)
            out.append(self._cache[text])
        return out

    async def embed_passages(self, texts: Sequence[str]) -> list[Vector]:
        """Not cached: stored texts rarely repeat."""
        return await self._inner.embed_passages(texts)

    async def ping(self) -> None:
        """Ping the inner embedder."""
        await self._inner.ping()

    async def aclose(self) -> None:
        """Close the inner embedder."""
        await self._inner.aclose()
