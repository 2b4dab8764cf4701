"""The ``database`` section: which PostgreSQL, and the pool of connections to it (store/pool.py opens it)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from npc_memory.errors import ConfigError

PlanCacheMode = Literal["force_generic_plan", "auto", "force_custom_plan"]
"""PostgreSQL's ``plan_cache_mode`` values."""


@dataclass(frozen=True)
class PoolSettings:
    """How many connections to keep and how long to wait for one."""

    min_size: int = 2
    """Connections opened at start."""
    max_size: int = 10
    """Upper bound on open connections."""
    connect_timeout: float = 5.0
    """Seconds to wait for a connection before answering UNAVAILABLE."""
    # Every statement is prepared once per connection, and PostgreSQL's ``auto`` mode plans it again on every
    # execution (a custom plan) unless the generic plan's estimated cost is no higher than the custom plans'
    # average. The generic estimate goes by the table's rows per player, so a few heavy players make everyone
    # else's custom plans look cheaper and the generic plan is never used: every search and store is planned again
    # (docs/decisions/generic-plans.md). The statements are written to plan well generically (store/view.py,
    # store/search_sql.py, the write path's reads).
    plan_cache_mode: PlanCacheMode = "force_generic_plan"
    """PostgreSQL's ``plan_cache_mode`` on every pooled connection."""


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

    def __post_init__(self) -> None:
        if self.pool_min < 1 or self.pool_max < self.pool_min:
            raise ConfigError("pool sizes need 1 <= pool_min <= pool_max")

    def pool(self) -> PoolSettings:
        """The connection pool's part of these settings."""
        return PoolSettings(min_size=self.pool_min, max_size=self.pool_max, connect_timeout=self.connect_timeout,
                            plan_cache_mode=self.plan_cache_mode)
