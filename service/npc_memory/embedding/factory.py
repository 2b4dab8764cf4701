"""Builds the configured embedder."""

from __future__ import annotations

import logging
import time

from npc_memory.embedding.base import Embedder
from npc_memory.embedding.cache import QueryCache
from npc_memory.embedding.settings import EmbeddingSettings

log = logging.getLogger(__name__)


async def create_embedder(config: EmbeddingSettings) -> Embedder:
    """The embedder ``config`` names, with the query cache in front when enabled."""
    inner: Embedder
    if config.kind == "local":
        from npc_memory.embedding.local import LocalE5Embedder

        # Loading takes seconds (15-20 on a small machine) before the port opens: say so, so a start is not silent.
        log.info("loading the bundled embedding model (multilingual-e5-small)")
        started = time.perf_counter()
        inner = LocalE5Embedder(config.threads, config.spin_count)
        log.info("embedding model %s loaded in %.1f s", inner.name, time.perf_counter() - started)
    elif config.kind == "openai":
        from npc_memory.embedding.openai_http import OpenAIEmbedder

        inner = await OpenAIEmbedder.connect(config)
    else:
        from npc_memory.embedding.none import CallerVectorsOnly

        inner = CallerVectorsOnly(config.dim, config.model)
    if config.query_cache_size > 0 and inner.available:
        return QueryCache(inner, config.query_cache_size)
    return inner
