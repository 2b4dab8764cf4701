"""The ``http`` section: the HTTP face's port, whether the inspector may edit, CORS."""

from __future__ import annotations

from dataclasses import dataclass

from npc_memory.errors import ConfigError


@dataclass(frozen=True)
class HttpConfig:
    """The HTTP port beside gRPC: the inspector, gRPC-Web and MCP over streamable HTTP."""

    port: int | None = None
    """TCP port on the gRPC host; None leaves the HTTP face off, 0 picks a free port."""
    allow_edits: bool = False
    """Whether admin keys may edit in the inspector (invalidate, change importance, forget a player)."""
    cors_origins: tuple[str, ...] = ()
    """Browser origins allowed to call gRPC-Web and MCP from another site (``*`` for any); none: same origin only."""

    def __post_init__(self) -> None:
        if self.port is not None and not 0 <= self.port <= 65535:
            raise ConfigError(f"http_port {self.port} is outside 0-65535")

    @property
    def enabled(self) -> bool:
        """Whether the HTTP face is served."""
        return self.port is not None


def http_port(value: str) -> int | None:
    """A port number; ``off`` or an empty value leaves the HTTP face off."""
    if value.strip().lower() in ("", "off", "none"):
        return None
    return int(value)


def origins(value: str) -> tuple[str, ...]:
    """Comma-separated origins (``https://game.example``) or ``*`` (a TOML array arrives joined by commas)."""
    return tuple(o.strip().rstrip("/") for o in value.split(",") if o.strip())
