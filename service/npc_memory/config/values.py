"""Parsers of setting values: how a setting's text or TOML table becomes a value (config/load.py uses them)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, get_args

from npc_memory.domain.model import Weights
from npc_memory.domain.retention import RetentionPolicy
from npc_memory.errors import ConfigError

ENV_PREFIX = "NPC_MEMORY_"
"""What every environment variable of the service starts with."""


HALF_LIFE_KEY = "recency_half_life_days"


def weights_table(raw: Mapping[str, Any], where: str) -> Weights:
    """Search weights from a TOML table (its half-life key aside)."""
    try:
        return Weights(**{k: float(v) for k, v in raw.items() if k != HALF_LIFE_KEY})
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: {exc}") from exc


def retention_policy(raw: Mapping[str, Any], where: str, base: RetentionPolicy) -> RetentionPolicy:
    """A heroine's retention policy from its TOML table; missing keys come from ``base``."""
    try:
        return replace(base, **{k: int(v) for k, v in raw.items()})
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: {exc}") from exc


def optional_path(value: str) -> Path | None:
    """A path with ``~`` expanded, or None for an empty value."""
    return Path(value).expanduser() if value else None


def boolean(value: str) -> bool:
    """true/false, yes/no, on/off or 1/0."""
    if value.lower() in ("1", "true", "yes", "on"):
        return True
    if value.lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError("must be true or false")


def one_of(kind: Any) -> Callable[[str], Any]:
    """A parser admitting the values of the Literal type ``kind`` ("must be a, b or c" for anything else)."""
    allowed: tuple[str, ...] = get_args(kind)

    def parse(value: str) -> Any:
        if value not in allowed:
            raise ValueError(f"must be {', '.join(allowed[:-1])} or {allowed[-1]}")
        return value
    return parse
