"""Configuration: one frozen dataclass per section, read once at start from flags, environment and TOML."""

from npc_memory.config.sections import (
    Config,
    DatabaseConfig,
    KeywordBackend,
    PeriodSearch,
    RetentionConfig,
    SearchConfig,
    WriteConfig,
    load_config,
)
from npc_memory.config.server import EventLoop, SecurityConfig, ServerConfig

__all__ = [
    "Config",
    "DatabaseConfig",
    "EventLoop",
    "KeywordBackend",
    "PeriodSearch",
    "RetentionConfig",
    "SearchConfig",
    "SecurityConfig",
    "ServerConfig",
    "WriteConfig",
    "load_config",
]
