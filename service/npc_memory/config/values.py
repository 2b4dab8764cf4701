"""Parsers of setting values: where a setting is read from, and how its text becomes a value (config.py uses them)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar, get_args

from npc_memory.domain.model import Weights
from npc_memory.domain.retention import RetentionPolicy
from npc_memory.errors import ConfigError

ENV_PREFIX = "NPC_MEMORY_"
T = TypeVar("T")


def pick_setting(
    name: str, flags: Mapping[str, Any], env: Mapping[str, str], file: Mapping[str, Any],
    default: T, parse: Callable[[str], T],
) -> T:
    """Flag, then ``NPC_MEMORY_<NAME>``, then the TOML file, then the default."""
    if flags.get(name) is not None:
        return parse(str(flags[name]))
    env_value = env.get(ENV_PREFIX + name.upper())
    if env_value not in (None, ""):
        try:
            return parse(env_value)
        except ValueError as exc:
            raise ConfigError(f"{ENV_PREFIX}{name.upper()}={env_value!r}: {exc}") from exc
    if name in file:
        return parse(str(file[name]))
    return default


HALF_LIFE_KEY = "recency_half_life_days"


def weights_table(raw: Mapping[str, Any], where: str) -> Weights:
    """Search weights from a TOML table (its half-life key aside)."""
    try:
        return Weights(**{k: float(v) for k, v in raw.items() if k != HALF_LIFE_KEY})
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: {exc}") from exc


def half_life_days(raw: Mapping[str, Any], where: str, default: float) -> float:
    """A recency half-life in days from a TOML table (``recency_half_life_days``), positive."""
    try:
        value = float(raw.get(HALF_LIFE_KEY, default))
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where}.{HALF_LIFE_KEY}: {exc}") from exc
    if not value > 0:
        raise ConfigError(f"{where}.{HALF_LIFE_KEY}: must be a positive number of days")
    return value


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
