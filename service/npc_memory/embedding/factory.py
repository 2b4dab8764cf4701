"""Builds the configured embedder."""

from __future__ import annotations

from npc_memory.embedding.base import Embedder
from npc_memory.embedding.cache import QueryCache
from npc_memory.embedding.settings import EmbeddingSettings


async def create_embedder(config: EmbeddingSettings) -> Embedder:
    """The embedder ``config`` names, with the query cache in front when enabled."""
    inner: Embedder
    if config.kind == "local":
        from npc_memory.embedding.local import LocalE5Embedder

        inner = LocalE5Embedder(config.threads, config.spin_count)
    elif config.kind == "openai":
        from npc_memory.embedding.openai_http import OpenAIEmbedder

        inner = await OpenAIEmbedder.connect(config)
    else:
        from npc_memory.embedding.none import CallerVectorsOnly

        inner = CallerVectorsOnly(config.dim, config.model)
    if config.query_cache_size > 0 and inner.available:
        return QueryCache(inner, config.query_cache_size)
    return inner
