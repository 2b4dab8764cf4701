"""Configuration: one frozen dataclass per section, read once at start from flags, environment and TOML."""

from npc_memory.config.database import DatabaseConfig, PlanCacheMode, PoolSettings
from npc_memory.config.extraction import ExtractionSettings
from npc_memory.config.http import HttpConfig
from npc_memory.config.load import SECTIONS, load_config
from npc_memory.config.sections import (
    Config,
    KeywordBackend,
    PeriodSearch,
    RetentionConfig,
    SearchConfig,
    WriteConfig,
)
from npc_memory.config.server import EventLoop, SecurityConfig, ServerConfig

__all__ = [
    "SECTIONS",
    "Config",
    "DatabaseConfig",
    "EventLoop",
    "ExtractionSettings",
    "HttpConfig",
    "KeywordBackend",
    "PeriodSearch",
    "PlanCacheMode",
    "PoolSettings",
    "RetentionConfig",
    "SearchConfig",
    "SecurityConfig",
    "ServerConfig",
    "WriteConfig",
    "load_config",
]
