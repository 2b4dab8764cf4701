"""The configuration's sections as frozen dataclasses, one per TOML table and environment prefix.

Each field's docstring is its documentation (the configuration reference is generated from them); each section
checks its own values when made (``__post_init__``, ConfigError naming the setting). config/load.py reads every
section the same way from flags, the environment and the TOML file. The sections of other packages' settings
(``embedding``, ``text``) are those packages' own plain dataclasses.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from npc_memory.config.database import DatabaseConfig
from npc_memory.config.extraction import ExtractionSettings
from npc_memory.config.http import HttpConfig
from npc_memory.config.server import SecurityConfig, ServerConfig
from npc_memory.domain.model import TURN_WEIGHTS, Weights
from npc_memory.domain.retention import RetentionPolicies
from npc_memory.domain.score_constants import RECENCY_HALF_LIFE_DAYS
from npc_memory.embedding.settings import EmbeddingSettings
from npc_memory.errors import ConfigError
from npc_memory.text import TextOptions

KeywordBackend = Literal["auto", "bm25", "pgroonga"]
PeriodSearch = Literal["off", "candidates", "first"]
SCOPE_CACHE_ROWS = 50_000
"""Rows held by default: ~3 KB each with a 384-float vector (measured at 500 and 2,000 rows), so ~150 MB."""


@dataclass(frozen=True)
class SearchConfig:
    """Search defaults and limits."""

    default_weights: Weights = Weights()  # noqa: RUF009  (frozen, so sharing the instance is safe)
    """Weights when a request has none and its heroine has no entry below."""
    heroine_weights: Mapping[str, Weights] = field(default_factory=dict)
    """Per-heroine default weights."""
    default_limit: int = 10
    """Results when a request asks for 0."""
    max_limit: int = 100
    """Largest ``limit`` a request may ask for."""
    candidates: int = 50
    """Candidates taken from each side (dense, keyword, recency/importance) before scoring."""
    deepen_min_relevance: float = 0.85
    """The raw cosine a result needs to answer a deepen search (e5 cosines of related Korean text: ~0.8-0.9)."""
    expand_per_depth: int = 5
    """Memories ExpandMemory links at most per call (one depth)."""
    recency_half_life_days: float = RECENCY_HALF_LIFE_DAYS
    """Days (game days when requests send game time) after which recency has halved (365)."""
    heroine_half_lives: Mapping[str, float] = field(default_factory=dict)
    """Per-heroine recency half-life ([search.heroines.X] recency_half_life_days)."""
    period_search: PeriodSearch = "first"
    """A period named in the query text ("지난달에", "last May"), when the request has no ``as_of``: ``off``
    ignores it, ``candidates`` adds the period's best-cosine memories to the candidates, ``first`` also ranks
    them above the rest (the conversation benchmark measures each: docs/explanation/benchmarks.md)."""
    scope_cache_rows: int = SCOPE_CACHE_ROWS
    """Memories this process holds to rank searches in memory (search/held.py); 0 ranks every search in SQL."""
    keyword_backend: KeywordBackend = "bm25"
    """``bm25`` in SQL (the default, on every PostgreSQL), ``pgroonga`` (refused at start when the database lacks
    it), or ``auto`` (PGroonga if present). Stated, not detected by default, so a database that happens to carry
    PGroonga does not change the ranking (server/runtime.py ``resolve_backend``)."""

    def __post_init__(self) -> None:
        if not 1 <= self.expand_per_depth <= self.max_limit:
            raise ConfigError(f"expand_per_depth must be in 1-{self.max_limit}")
        if not -1.0 < self.deepen_min_relevance <= 1.0:
            raise ConfigError("deepen_min_relevance must be a cosine in (-1, 1]")
        if self.scope_cache_rows < 0:
            raise ConfigError("scope_cache_rows must be >= 0 (0: off)")
        for where, days in (("search", self.recency_half_life_days),
                            *((f"search.heroines.{h}", d) for h, d in self.heroine_half_lives.items())):
            if not days > 0:
                raise ConfigError(f"{where}: recency_half_life_days must be a positive number of days")

    def weights_for(self, heroine_id: str) -> Weights:
        """The default weights of one heroine."""
        return self.heroine_weights.get(heroine_id, self.default_weights)

    def turn_weights_for(self, heroine_id: str) -> Weights | None:
        """The default weights of one heroine's dialogue turns (tier source); None: ``weights_for`` weighs them too.

        ``TURN_WEIGHTS`` unless weights are configured (``[search.weights]`` or the heroine's): those weigh every
        memory, as a request's own weights do.
        """
        if heroine_id in self.heroine_weights or self.default_weights != Weights():
            return None
        return TURN_WEIGHTS

    def recency_days_for(self, heroine_id: str) -> float:
        """The heroine's recency time scale: recency = exp(-age / this), i.e. the half-life / ln 2."""
        return self.heroine_half_lives.get(heroine_id, self.recency_half_life_days) / math.log(2)


@dataclass(frozen=True)
class WriteConfig:
    """Write-path limits and rules."""

    max_batch: int = 256
    """Most memories in one StoreMemories call."""
    max_content_chars: int = 2000
    """Longest content accepted."""
    duplicate_threshold: float = 0.93
    """Cosine at or above which a valid same-subject memory with the same terms and markers is a duplicate.

    With the term guard no different-fact pair of the labelled Korean set merges at any threshold from 0.85 to
    0.99, and recall is flat up to 0.95; 0.93 leaves a margin below the lowest same-fact cosine (0.952)
    (docs/decisions/duplicate-rule.md). Equal normalised text is a duplicate at any cosine.
    """
    idempotency_hours: float = 24.0
    """How long a request_id's first response is kept."""
    tokenize_processes: int = 1
    """Worker processes (each with its own Kiwi, ~520 MiB RSS) that tokenise big batches off the server's GIL; 0 keeps
    all tokenising in a thread of the server process, where a big batch delays other calls
    (docs/decisions/tokenising-in-processes.md)."""
    tokenize_process_min_chars: int = 4000
    """A batch with fewer characters in all is tokenised in a thread here: cheaper than a process round trip."""

    def __post_init__(self) -> None:
        if not 0.0 < self.duplicate_threshold <= 1.0:
            raise ConfigError("duplicate_threshold must be in (0, 1]")
        if self.tokenize_processes < 0:
            raise ConfigError("tokenize_processes must be >= 0 (0 tokenises in a thread of the server process)")


@dataclass(frozen=True)
class RetentionConfig:
    """Forgetting: how many valid memories each scope keeps (``npc-memory retain``, or on a schedule)."""

    policies: RetentionPolicies = RetentionPolicies()  # noqa: RUF009  (frozen, so sharing the instance is safe)
    """The default policy and the per-heroine ones."""
    interval_minutes: float = 0.0
    """How often ``serve`` applies the policies and prunes expired idempotency keys; 0 leaves it to the command."""

    def __post_init__(self) -> None:
        for name, policy in {"default": self.policies.default, **self.policies.heroines}.items():
            if policy.max_valid < 0 or not 1 <= policy.importance_floor <= 11:
                raise ConfigError(f"retention {name}: max_valid must be >= 0 and importance_floor in 1-11")


@dataclass(frozen=True)
class Config:
    """Everything the service needs, read once at start."""

    server: ServerConfig = ServerConfig()  # noqa: RUF009  (frozen, so sharing it is safe)
    security: SecurityConfig = SecurityConfig()  # noqa: RUF009  (frozen, so sharing it is safe)
    http: HttpConfig = HttpConfig()  # noqa: RUF009  (frozen, so sharing it is safe)
    """The HTTP face (inspector, gRPC-Web, MCP); off unless a port is given."""
    database: DatabaseConfig = DatabaseConfig()  # noqa: RUF009  (frozen, so sharing it is safe)
    embedding: EmbeddingSettings = EmbeddingSettings()  # noqa: RUF009  (frozen, so sharing it is safe)
    search: SearchConfig = SearchConfig()
    write: WriteConfig = WriteConfig()
    retention: RetentionConfig = RetentionConfig()
    text: TextOptions = TextOptions()  # noqa: RUF009  (frozen, so sharing it is safe)
    """How text becomes BM25 terms (text/tokenize.py); options that change stored terms need re-tokenising."""
    text_set: bool = False
    """Whether a stored-side text option was set (flag, environment or file). Unset, a database that records
    other options than the defaults keeps its own (server/runtime.py ``text_options``); set, start-up refuses a
    mismatch."""
    extraction: ExtractionSettings = ExtractionSettings()  # noqa: RUF009  (frozen, so sharing it is safe)

    def __post_init__(self) -> None:
        if self.extraction.url and self.embedding.kind == "none":
            # Extracted facts are stored with the server's vectors: with none, every job would fail and be retried.
            raise ConfigError("extraction_url needs an embedder that embeds text (local or openai), not 'none': "
                              "the facts a model extracts are stored with vectors the server makes")
