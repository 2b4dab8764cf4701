"""The configuration's cross-setting checks, run once by ``load_config``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from npc_memory.errors import ConfigError

if TYPE_CHECKING:
    from npc_memory.config.sections import Config, WriteConfig
    from npc_memory.config.server import ServerConfig
    from npc_memory.extraction.settings import ExtractionSettings


def _check_limits(server: ServerConfig) -> None:
    if server.health_interval_seconds <= 0 or server.health_timeout_seconds <= 0:
        raise ConfigError("health_interval and health_timeout must be positive")
    if server.max_concurrent_streams < 0 or server.max_send_message_bytes < 1024:
        raise ConfigError("max_concurrent_streams must be >= 0 (0: no cap) and max_send_message_bytes >= 1024")


def _check_extraction(ex: ExtractionSettings) -> None:
    if ex.max_attempts < 1 or min(ex.timeout_seconds, ex.lease_seconds, ex.poll_seconds) <= 0:
        raise ConfigError("extraction needs max_attempts >= 1 and positive timeout, lease and poll seconds")
    if ex.lease_seconds <= ex.timeout_seconds:
        raise ConfigError("extraction lease_seconds must exceed timeout_seconds (a job must outlast its call)")


def _check_write(write: WriteConfig) -> None:
    if not 0.0 < write.duplicate_threshold <= 1.0:
        raise ConfigError("duplicate_threshold must be in (0, 1]")
    if write.dialogue_context_minutes < 0:
        raise ConfigError("dialogue_context_minutes must be >= 0")
    if write.dialogue_batch_min < 0:
        raise ConfigError("dialogue_batch_min must be >= 0")
    if write.tokenize_processes < 0:
        raise ConfigError("tokenize_processes must be >= 0 (0 tokenises in a thread of the server process)")


def check(config: Config) -> None:
    """Raise ConfigError naming the first setting out of its range or combination."""
    if not 0 <= config.server.port <= 65535:
        raise ConfigError(f"port {config.server.port} is outside 0-65535")
    if config.server.workers < 1:
        raise ConfigError("workers must be at least 1")
    if (config.security.tls_cert is None) != (config.security.tls_key is None):
        raise ConfigError("tls_cert and tls_key go together")
    if config.security.tls_client_ca is not None and not config.security.tls:
        raise ConfigError("tls_client_ca (mutual TLS) needs tls_cert and tls_key")
    _check_limits(config.server)
    if config.database.pool_min < 1 or config.database.pool_max < config.database.pool_min:
        raise ConfigError("pool sizes need 1 <= pool_min <= pool_max")
    if config.embedding.kind == "none" and config.embedding.dim <= 0:
        raise ConfigError("embedder 'none' needs embedding_dim (the size of the caller's vectors)")
    _check_write(config.write)
    if not 1 <= config.search.expand_per_depth <= config.search.max_limit:
        raise ConfigError(f"expand_per_depth must be in 1-{config.search.max_limit}")
    if not -1.0 < config.search.deepen_min_relevance <= 1.0:
        raise ConfigError("deepen_min_relevance must be a cosine in (-1, 1]")
    if config.search.session_cap < 0:
        raise ConfigError("search_session_cap must be >= 0 (0: off)")
    if config.search.scope_cache_rows < 0:
        raise ConfigError("scope_cache_rows must be >= 0 (0: off)")
    _check_extraction(config.extraction)
    policies = config.retention.policies
    for name, policy in {"default": policies.default, **policies.heroines}.items():
        if policy.max_valid < 0 or not 1 <= policy.importance_floor <= 11:
            raise ConfigError(f"retention {name}: max_valid must be >= 0 and importance_floor in 1-11")
