"""Configuration as frozen dataclasses, built once in ``main`` from flags, environment and a TOML file."""

from __future__ import annotations

import math
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from npc_memory.config.checks import check
from npc_memory.config.http import HttpConfig, http_port, origins
from npc_memory.config.server import EventLoop, SecurityConfig, ServerConfig
from npc_memory.config.values import (
    ENV_PREFIX,
    HALF_LIFE_KEY,
    T,
    boolean,
    half_life_days,
    one_of,
    optional_path,
    pick_setting,
    retention_policy,
    weights_table,
)
from npc_memory.domain.dialogue import ContextWhen, SpeakerLabel
from npc_memory.domain.model import Weights
from npc_memory.domain.retention import RetentionPolicies, RetentionPolicy
from npc_memory.domain.scoring import RECENCY_HALF_LIFE_DAYS
from npc_memory.embedding.settings import EmbedderKind, EmbeddingSettings
from npc_memory.errors import ConfigError
from npc_memory.extraction.settings import ExtractionSettings
from npc_memory.store.pool import PlanCacheMode, PoolSettings
from npc_memory.store.scope_cache import SCOPE_CACHE_ROWS
from npc_memory.text import STORED_SIDE, TextOptions

KeywordBackend = Literal["auto", "bm25", "pgroonga"]
PeriodSearch = Literal["off", "candidates", "first"]


@dataclass(frozen=True)
class DatabaseConfig:
    """Which PostgreSQL to use and how to pool connections to it."""

    url: str | None = None
    """A libpq DSN; ``None`` starts the embedded PostgreSQL in ``data_dir``."""
    data_dir: Path = Path("npc-memory-data")
    """Where the embedded PostgreSQL keeps its files (``load_config`` defaults it to $XDG_DATA_HOME/npc-memory)."""
    pool_min: int = 2
    """Connections opened at start."""
    pool_max: int = 10
    """Upper bound on open connections."""
    connect_timeout: float = 5.0
    """Seconds to wait for a connection before answering UNAVAILABLE."""
    plan_cache_mode: PlanCacheMode = PoolSettings.plan_cache_mode
    """PostgreSQL's ``plan_cache_mode`` on the pool's connections (store/pool.py says why generic)."""

    def pool(self) -> PoolSettings:
        """The connection pool's part of these settings."""
        return PoolSettings(min_size=self.pool_min, max_size=self.pool_max, connect_timeout=self.connect_timeout,
                            plan_cache_mode=self.plan_cache_mode)


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
    distinct_turns: bool = True
    """Show a dialogue line said many times once per search: the best-ranked copy (domain/dialogue.py)."""
    session_cap: int = 0
    """Hits of one conversation session in a page before the other sessions' hits come first (domain/sessions.py);
    0 keeps the ranked order."""
    period_search: PeriodSearch = "first"
    """A period named in the query text ("지난달에", "last May"), when the request has no ``as_of``: ``off``
    ignores it, ``candidates`` adds the period's best-cosine memories to the candidates, ``first`` also ranks
    them above the rest (docs/conversation-benchmark.md measures each)."""
    scope_cache_rows: int = SCOPE_CACHE_ROWS
    """Memories this process holds to rank searches in memory (store/scope_cache.py); 0 ranks every search in SQL."""

    def weights_for(self, heroine_id: str) -> Weights:
        """The default weights of one heroine."""
        return self.heroine_weights.get(heroine_id, self.default_weights)

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

    Measured by ``python -m benchmarks.dedup`` (docs/write-path.md): with the term guard no different-fact pair
    merges at any threshold from 0.85 to 0.99, and recall is flat up to 0.95; 0.93 leaves a margin below the
    lowest same-fact cosine (0.952). Equal normalised text is a duplicate at any cosine.
    """
    idempotency_hours: float = 24.0
    """How long a request_id's first response is kept."""
    dialogue_context_minutes: float = 30.0
    """A dialogue turn (tier source, vector made here) is embedded with the turn said at most this long before it.

    domain/dialogue.py; 0 embeds every turn alone. ``python -m benchmarks.conversation.run`` measures it.
    """
    dialogue_context_answer: bool = True
    """A question turn of a batch is also embedded with the turn after it (its answer): domain/dialogue.py."""
    dialogue_context_when: ContextWhen = "always"
    """Which turns take the previous turn as context: ``always``, ``asked`` (it asks a question) or
    ``asked-or-short`` (or the turn is at most 16 characters): domain/dialogue.py ``takes_previous``."""
    dialogue_speaker_label: SpeakerLabel = "name"
    """A turn's speaker written before its line in the embedded text: ``off``, ``role`` (나/너, Me/You) or
    ``name`` (the heroine's id for her lines): domain/dialogue.py ``speaker_label``."""
    dialogue_same_voice: bool = True
    """A lone line by the latest row's speaker joins it when another voice spoke at that moment (``joins_dialogue``)."""
    dialogue_repeated_lines: bool = True
    """A dated lone line with nothing said just before it is a turn if its speaker said it in a dialogue before."""
    dialogue_batch_min: int = 8
    """A request of at least this many short lines, the speakers taking turns, no slot, is a dialogue whatever its
    tier: its facts get the turns' treatment (domain/dialogue.py ``dialogue_batch``); 0 turns it off."""
    tokenize_processes: int = 1
    """Worker processes (each with its own Kiwi, ~520 MiB RSS) that tokenise big batches off the server's GIL; 0 keeps
    all tokenising in a thread of the server process (health checks then wait up to ~100 ms during a big batch)."""
    tokenize_process_min_chars: int = 4000
    """A batch with fewer characters in all is tokenised in a thread here: cheaper than a process round trip."""


@dataclass(frozen=True)
class RetentionConfig:
    """Forgetting: how many valid memories each scope keeps (``npc-memory retain``, or on a schedule)."""

    policies: RetentionPolicies = RetentionPolicies()  # noqa: RUF009  (frozen, so sharing the instance is safe)
    """The default policy and the per-heroine ones."""
    interval_minutes: float = 0.0
    """How often ``serve`` applies the policies and prunes expired idempotency keys; 0 leaves it to the command."""


@dataclass(frozen=True)
class Config:
    """Everything the service needs, read once at start."""

    server: ServerConfig = ServerConfig()  # noqa: RUF009  (frozen, so sharing it is safe)
    security: SecurityConfig = SecurityConfig()  # noqa: RUF009  (frozen, so sharing it is safe)
    http: HttpConfig = HttpConfig()  # noqa: RUF009  (frozen, so sharing it is safe)
    """The HTTP face (inspector, gRPC-Web, MCP); off unless a port is given."""
    database: DatabaseConfig = DatabaseConfig()
    embedding: EmbeddingSettings = EmbeddingSettings()  # noqa: RUF009  (frozen, so sharing it is safe)
    search: SearchConfig = SearchConfig()
    write: WriteConfig = WriteConfig()
    retention: RetentionConfig = RetentionConfig()
    text: TextOptions = TextOptions()  # noqa: RUF009  (frozen, so sharing it is safe)
    """How text becomes BM25 terms (text/tokenize.py); options that change stored terms need re-tokenising."""
    text_set: bool = False
    """Whether a stored-side text option was set (flag, environment or file). Unset, a database that records
    other options than the defaults keeps its own (runtime.text_options); set, start-up refuses a mismatch."""
    extraction: ExtractionSettings = ExtractionSettings()  # noqa: RUF009  (frozen, so sharing it is safe)
    keyword_backend: KeywordBackend = "auto"
    """``bm25`` in SQL, ``pgroonga`` when the database has it, or ``auto`` (PGroonga if present); resolved at
    start against the database (runtime.resolve_backend)."""

_kind = one_of(EmbedderKind)
_backend = one_of(KeywordBackend)
_period_search = one_of(PeriodSearch)
_context_when = one_of(ContextWhen)
_speaker_label = one_of(SpeakerLabel)
_event_loop = one_of(EventLoop)
_plan_cache_mode = one_of(PlanCacheMode)


def load_config(flags: Mapping[str, Any], env: Mapping[str, str]) -> Config:
    """Build the configuration from parsed flags, an environment mapping and the optional TOML file."""
    path = flags.get("config") or env.get(ENV_PREFIX + "CONFIG")
    file: dict[str, Any] = {}
    if path:
        try:
            file = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"config file {path}: {exc}") from exc
    flat = {k: v for k, v in file.items() if not isinstance(v, dict)}
    home = Path(env.get("HOME", "~")).expanduser()
    data_home = Path(env.get("XDG_DATA_HOME") or home / ".local" / "share")

    def pick(name: str, default: T, parse: Callable[[str], T]) -> T:
        return pick_setting(name, flags, env, flat, default, parse)

    text_given: dict[str, bool | None] = {name: pick(f"text_{name}", None, boolean) for name in STORED_SIDE}
    search_file = file.get("search", {})
    default_weights = weights_table(search_file.get("weights", {}), "search.weights")
    heroine_weights = {
        hid: weights_table(w, f"search.heroines.{hid}") for hid, w in search_file.get("heroines", {}).items()
    }
    half_life = half_life_days(search_file, "search", SearchConfig.recency_half_life_days)
    heroine_half_lives = {
        hid: half_life_days(h, f"search.heroines.{hid}", half_life)
        for hid, h in search_file.get("heroines", {}).items() if HALF_LIFE_KEY in h
    }
    url = pick("database_url", "", str) or None
    retention_file = file.get("retention", {})
    # Flags and environment (retention_*), then the [retention] table, then the defaults.
    retention_default = RetentionPolicy(
        max_valid=pick("retention_max_valid", int(retention_file.get("max_valid", RetentionPolicy.max_valid)), int),
        importance_floor=pick("retention_importance_floor", int(retention_file.get(
            "importance_floor", RetentionPolicy.importance_floor)), int),
    )
    config = Config(
        server=ServerConfig(
            host=pick("host", ServerConfig.host, str),
            port=pick("port", ServerConfig.port, int),
            grace_seconds=pick("grace_seconds", ServerConfig.grace_seconds, float),
            workers=pick("workers", ServerConfig.workers, int),
            event_loop=pick("event_loop", ServerConfig.event_loop, _event_loop),
            health_interval_seconds=pick("health_interval", ServerConfig.health_interval_seconds, float),
            health_timeout_seconds=pick("health_timeout", ServerConfig.health_timeout_seconds, float),
            max_concurrent_streams=pick("max_concurrent_streams", ServerConfig.max_concurrent_streams, int),
            max_send_message_bytes=pick("max_send_message_bytes", ServerConfig.max_send_message_bytes, int),
            keepalive_seconds=pick("keepalive_seconds", ServerConfig.keepalive_seconds, float),
            keepalive_timeout_seconds=pick("keepalive_timeout_seconds", ServerConfig.keepalive_timeout_seconds, float),
            max_connection_age_seconds=pick(
                "max_connection_age_seconds", ServerConfig.max_connection_age_seconds, float),
            max_connection_age_grace_seconds=pick(
                "max_connection_age_grace_seconds", ServerConfig.max_connection_age_grace_seconds, float),
        ),
        security=SecurityConfig(
            api_keys_file=pick("api_keys_file", None, optional_path),
            tls_cert=pick("tls_cert", None, optional_path),
            tls_key=pick("tls_key", None, optional_path),
            tls_client_ca=pick("tls_client_ca", None, optional_path),
            metrics_port=pick("metrics_port", SecurityConfig.metrics_port, int),
            tracing=pick("tracing", SecurityConfig.tracing, boolean),
            log_json=pick("log_json", SecurityConfig.log_json, boolean),
            log_user_ids=pick("log_user_ids", SecurityConfig.log_user_ids, boolean),
        ),
        http=HttpConfig(
            port=pick("http_port", HttpConfig.port, http_port),
            allow_edits=pick("http_allow_edits", HttpConfig.allow_edits, boolean),
            cors_origins=pick("http_cors_origins", HttpConfig.cors_origins, origins),
        ),
        database=DatabaseConfig(
            url=url,
            data_dir=Path(pick("data_dir", str(data_home / "npc-memory"), str)).expanduser(),
            pool_min=pick("pool_min", DatabaseConfig.pool_min, int),
            pool_max=pick("pool_max", DatabaseConfig.pool_max, int),
            connect_timeout=pick("connect_timeout", DatabaseConfig.connect_timeout, float),
            plan_cache_mode=pick("plan_cache_mode", DatabaseConfig.plan_cache_mode, _plan_cache_mode),
        ),
        embedding=EmbeddingSettings(
            kind=pick("embedder", EmbeddingSettings.kind, _kind),
            model=pick("embedding_model", EmbeddingSettings.model, str),
            url=pick("embedding_url", EmbeddingSettings.url, str),
            api_key=pick("embedding_api_key", EmbeddingSettings.api_key, str),
            dim=pick("embedding_dim", EmbeddingSettings.dim, int),
            timeout_seconds=pick("embedding_timeout", EmbeddingSettings.timeout_seconds, float),
            threads=pick("embedding_threads", EmbeddingSettings.threads, int),
            spin_count=pick("embedding_spin_count", EmbeddingSettings.spin_count, int),
            query_cache_size=pick("query_cache_size", EmbeddingSettings.query_cache_size, int),
            query_prefix=pick("embedding_query_prefix", EmbeddingSettings.query_prefix, str),
            passage_prefix=pick("embedding_passage_prefix", EmbeddingSettings.passage_prefix, str),
        ),
        search=SearchConfig(
            default_weights=default_weights,
            heroine_weights=heroine_weights,
            recency_half_life_days=half_life,
            heroine_half_lives=heroine_half_lives,
            candidates=pick("search_candidates", SearchConfig.candidates, int),
            deepen_min_relevance=pick("deepen_min_relevance", SearchConfig.deepen_min_relevance, float),
            expand_per_depth=pick("expand_per_depth", SearchConfig.expand_per_depth, int),
            period_search=pick("search_period", SearchConfig.period_search, _period_search),
            distinct_turns=pick("search_distinct_turns", SearchConfig.distinct_turns, boolean),
            session_cap=pick("search_session_cap", SearchConfig.session_cap, int),
            scope_cache_rows=pick("scope_cache_rows", SearchConfig.scope_cache_rows, int),
        ),
        write=WriteConfig(
            max_batch=pick("max_batch", WriteConfig.max_batch, int),
            duplicate_threshold=pick("duplicate_threshold", WriteConfig.duplicate_threshold, float),
            idempotency_hours=pick("idempotency_hours", WriteConfig.idempotency_hours, float),
            dialogue_context_minutes=pick(
                "dialogue_context_minutes", WriteConfig.dialogue_context_minutes, float),
            dialogue_batch_min=pick("dialogue_batch_min", WriteConfig.dialogue_batch_min, int),
            dialogue_context_answer=pick("dialogue_context_answer", WriteConfig.dialogue_context_answer, boolean),
            dialogue_same_voice=pick("dialogue_same_voice", WriteConfig.dialogue_same_voice, boolean),
            dialogue_repeated_lines=pick("dialogue_repeated_lines", WriteConfig.dialogue_repeated_lines, boolean),
            dialogue_context_when=pick("dialogue_context_when", WriteConfig.dialogue_context_when, _context_when),
            dialogue_speaker_label=pick("dialogue_speaker_label", WriteConfig.dialogue_speaker_label, _speaker_label),
            tokenize_processes=pick("tokenize_processes", WriteConfig.tokenize_processes, int),
            tokenize_process_min_chars=pick("tokenize_process_min_chars", WriteConfig.tokenize_process_min_chars,
                                            int),
        ),
        retention=RetentionConfig(
            policies=RetentionPolicies(default=retention_default, heroines={
                hid: retention_policy(p, f"retention.heroines.{hid}", retention_default)
                for hid, p in retention_file.get("heroines", {}).items()
            }),
            interval_minutes=pick("retention_interval_minutes", float(retention_file.get(
                "interval_minutes", RetentionConfig.interval_minutes)), float),
        ),
        text=TextOptions(
            **{name: getattr(TextOptions, name) if value is None else value for name, value in text_given.items()},
            question_words=pick("text_question_words", TextOptions.question_words, boolean),
        ),
        text_set=any(value is not None for value in text_given.values()),
        extraction=_extraction(pick, file.get("extraction", {})),
        keyword_backend=pick("keyword_backend", Config.keyword_backend, _backend),
    )
    check(config)
    return config


def _extraction(pick: Callable[[str, Any, Callable[[str], Any]], Any], raw: Mapping[str, Any]) -> ExtractionSettings:
    """Flags and environment (extraction_*), then the [extraction] table, then the defaults."""
    d = ExtractionSettings()

    def get(name: str, parse: Callable[[str], Any]) -> Any:
        return pick(f"extraction_{name}", parse(str(raw.get(name, getattr(d, name)))), parse)

    heroines = raw.get("heroines")
    return ExtractionSettings(
        url=get("url", str), model=get("model", str), api_key=get("api_key", str),
        timeout_seconds=get("timeout_seconds", float), prompt_path=Path(get("prompt_path", str)).expanduser(),
        heroines=tuple(heroines) if heroines else d.heroines,
        max_attempts=get("max_attempts", int), backoff_seconds=get("backoff_seconds", float),
        backoff_max_seconds=get("backoff_max_seconds", float), lease_seconds=get("lease_seconds", float),
        poll_seconds=get("poll_seconds", float),
    )


