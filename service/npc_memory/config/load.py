"""One loader for every section: each setting from its flag, its environment variable, the TOML file or its default.

A setting's name is its section's prefix and its field (``extraction_url``: ``[extraction] url``); its environment
variable is that name in capitals after ``NPC_MEMORY_`` (``NPC_MEMORY_EXTRACTION_URL``), its flag the same name
(``--extraction-url`` where the command has one). A few settings kept the shorter names users already set
(``SECTIONS``' ``names``: ``NPC_MEMORY_PORT``, ``NPC_MEMORY_EMBEDDER``...). The first of these that is given wins:
the flag, the environment variable, the name as a top-level key of the TOML file, the field in the section's
table (``[server] port = 50051``), the field's default. A value is parsed as its field's type says; a value that
does not parse, or a section whose values do not go together, is a ConfigError naming the setting.

The tables that are not single values (per-heroine weights, half-lives and retention policies) are read by
``_search_tables`` and ``_retention``.
"""

from __future__ import annotations

import tomllib
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from npc_memory.config.database import DatabaseConfig
from npc_memory.config.extraction import ExtractionSettings
from npc_memory.config.http import HttpConfig, http_port, origins
from npc_memory.config.sections import (
    Config,
    RetentionConfig,
    SearchConfig,
    WriteConfig,
)
from npc_memory.config.server import SecurityConfig, ServerConfig
from npc_memory.config.values import (
    ENV_PREFIX,
    HALF_LIFE_KEY,
    boolean,
    one_of,
    optional_path,
    retention_policy,
    weights_table,
)
from npc_memory.domain.retention import RetentionPolicies, RetentionPolicy
from npc_memory.embedding.settings import EmbeddingSettings
from npc_memory.errors import ConfigError
from npc_memory.text import STORED_SIDE, TextOptions

Parse = Callable[[str], Any]


@dataclass(frozen=True)
class Section:
    """A section of the configuration: where its values are read from and how."""

    table: str
    """Its field of ``Config``, and its TOML table."""
    cls: type[Any]
    """The frozen dataclass it is."""
    prefix: str = ""
    """What comes before a field's name in the setting's name (and environment variable)."""
    names: Mapping[str, str] = field(default_factory=dict)
    """Fields whose setting keeps a name users already set, not ``prefix + field``."""
    parsers: Mapping[str, Parse] = field(default_factory=dict)
    """Fields read by a parser of their own rather than by their type."""
    skip: frozenset[str] = frozenset()
    """Fields that are not single settings: tables this module reads itself (``extra``), and fixed limits."""

    def name(self, field_name: str) -> str:
        """The setting's name: its flag's ``dest`` and, in capitals after ``NPC_MEMORY_``, its environment variable."""
        return self.names.get(field_name, self.prefix + field_name)


def env_name(name: str) -> str:
    """The environment variable of a setting."""
    return ENV_PREFIX + name.upper()


SECTIONS = (
    Section("server", ServerConfig, names={"health_interval_seconds": "health_interval",
                                           "health_timeout_seconds": "health_timeout"}),
    Section("security", SecurityConfig),
    Section("http", HttpConfig, "http_", parsers={"port": http_port, "cors_origins": origins}),
    Section("database", DatabaseConfig, names={"url": "database_url"}),
    Section("embedding", EmbeddingSettings, "embedding_", names={
        "kind": "embedder", "timeout_seconds": "embedding_timeout", "query_cache_size": "query_cache_size"}),
    Section("search", SearchConfig, "search_", names={
        "deepen_min_relevance": "deepen_min_relevance", "expand_per_depth": "expand_per_depth",
        "period_search": "search_period", "scope_cache_rows": "scope_cache_rows", "keyword_backend": "keyword_backend"},
        skip=frozenset({"default_weights", "heroine_weights", "heroine_half_lives", "default_limit", "max_limit"})),
    Section("write", WriteConfig, skip=frozenset({"max_content_chars"})),
    Section("retention", RetentionConfig, "retention_", skip=frozenset({"policies"})),
    Section("text", TextOptions, "text_"),
    Section("extraction", ExtractionSettings, "extraction_"),
)
"""Every section, in ``Config``'s order. (``default_limit``, ``max_limit`` and ``max_content_chars`` are fixed:
the API's limits, not settings.)"""


def _words(value: str) -> tuple[str, ...]:
    """Comma-separated words."""
    return tuple(w.strip() for w in value.split(",") if w.strip())


def _path(value: str) -> Path:
    """A path, ``~`` expanded."""
    return Path(value).expanduser()


def _optional_text(value: str) -> str | None:
    """Text, or None for an empty value."""
    return value or None


PARSERS: Mapping[Any, Parse] = {bool: boolean, int: int, float: float, str: str, Path: _path,
                                Path | None: optional_path, str | None: _optional_text, tuple[str, ...]: _words}
"""The parser of each plain field type; a Literal's values are checked by ``one_of``."""


def _by_type(kind: Any) -> Parse:
    """The parser of a field's type."""
    if typing.get_origin(kind) is typing.Literal:
        return one_of(kind)
    if kind not in PARSERS:
        raise TypeError(f"no parser for settings of type {kind!r}")
    return PARSERS[kind]


class _Sources:
    """The flags, environment and TOML file a configuration is read from, and which settings they gave."""

    def __init__(self, flags: Mapping[str, Any], env: Mapping[str, str], file: Mapping[str, Any]) -> None:
        self.flags, self.env, self.file = flags, env, file
        self.given: set[str] = set()

    def value(self, section: Section, name: str, field_name: str, parse: Parse, default: Any) -> Any:
        """The setting's value from the first source that gives it, parsed; else ``default``."""
        table = self.file.get(section.table, {})
        candidates = (
            ("flag --" + name.replace("_", "-"), self.flags.get(name)),
            (env_name(name), self.env.get(env_name(name)) or None),
            (f"{name} in the config file", self.file.get(name)),
            (f"[{section.table}] {field_name}", table.get(field_name) if isinstance(table, dict) else None),
        )
        for where, raw in candidates:
            if raw is None or isinstance(raw, dict):
                continue
            self.given.add(name)
            try:
                return parse(",".join(map(str, raw)) if isinstance(raw, list) else str(raw))
            except ValueError as exc:
                raise ConfigError(f"{where} = {raw!r}: {exc}") from exc
        return default


def _section(section: Section, sources: _Sources, defaults: Mapping[str, Any], extra: Mapping[str, Any]) -> Any:
    """One section's dataclass from its settings; ``extra`` gives the fields read from tables."""
    hints = typing.get_type_hints(section.cls)
    values: dict[str, Any] = dict(extra)
    for f in fields(section.cls):
        if f.name in section.skip or f.name in values or not f.init:
            continue
        parse = section.parsers.get(f.name) or _by_type(hints[f.name])
        default = defaults.get(f.name, f.default)
        values[f.name] = sources.value(section, section.name(f.name), f.name, parse, default)
    return section.cls(**values)


def _read_file(path: str | None) -> dict[str, Any]:
    if not path:
        return {}
    try:
        return tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"config file {path}: {exc}") from exc


def _search_tables(file: Mapping[str, Any]) -> dict[str, Any]:
    """The ``[search.weights]`` and ``[search.heroines.<id>]`` tables: default and per-heroine weights, half-lives."""
    table = file.get("search", {})
    heroines = table.get("heroines", {})
    try:
        half_lives = {hid: float(h[HALF_LIFE_KEY]) for hid, h in heroines.items() if HALF_LIFE_KEY in h}
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"search.heroines: {HALF_LIFE_KEY}: {exc}") from exc
    return {
        "default_weights": weights_table(table.get("weights", {}), "search.weights"),
        "heroine_weights": {hid: weights_table(w, f"search.heroines.{hid}") for hid, w in heroines.items()},
        "heroine_half_lives": half_lives,
    }


def _retention(sources: _Sources, file: Mapping[str, Any]) -> dict[str, Any]:
    """The retention policies: the default one, and the ``[retention.heroines.<id>]`` ones that start from it.

    The default's ``max_valid`` and ``importance_floor`` are settings like any (``retention_max_valid``...).
    """
    section = next(s for s in SECTIONS if s.table == "retention")
    default = RetentionPolicy(**{
        name: sources.value(section, f"retention_{name}", name, int, getattr(RetentionPolicy, name))
        for name in ("max_valid", "importance_floor")})
    heroines = file.get("retention", {}).get("heroines", {})
    return {"policies": RetentionPolicies(default=default, heroines={
        hid: retention_policy(p, f"retention.heroines.{hid}", default) for hid, p in heroines.items()})}


def load_config(flags: Mapping[str, Any], env: Mapping[str, str]) -> Config:
    """Build the configuration from parsed flags, an environment mapping and the optional TOML file."""
    file = _read_file(flags.get("config") or env.get(ENV_PREFIX + "CONFIG"))
    sources = _Sources(flags, env, file)
    home = Path(env.get("HOME", "~")).expanduser()
    data_home = Path(env.get("XDG_DATA_HOME") or home / ".local" / "share")
    defaults = {"database": {"data_dir": data_home / "npc-memory"}}
    extras = {"search": _search_tables(file), "retention": _retention(sources, file)}
    made = {s.table: _section(s, sources, defaults.get(s.table, {}), extras.get(s.table, {})) for s in SECTIONS}
    text_set = any(f"text_{name}" in sources.given for name in STORED_SIDE)
    return Config(**made, text_set=text_set)
