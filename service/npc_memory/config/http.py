"""The ``http`` section: the HTTP face's port, whether the inspector may edit, CORS."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass


@dataclass(frozen=True)
class HttpConfig:
    """The HTTP port beside gRPC: the inspector, gRPC-Web and MCP over streamable HTTP."""

    port: int | None = None
    """TCP port on the gRPC host; None leaves the HTTP face off, 0 picks a free port."""
    allow_edits: bool = False
    """Whether admin keys may edit in the inspector (invalidate, change importance, forget a player)."""
    cors_origins: tuple[str, ...] = ()
    """Browser origins allowed to call gRPC-Web and MCP from another site (``*`` for any); none: same origin only."""

    @property
    def enabled(self) -> bool:
        """Whether the HTTP face is served."""
        return self.port is not None


def http_port(value: str) -> int | None:
    """A port number; ``off`` or an empty value leaves the HTTP face off."""
    if value.strip().lower() in ("", "off", "none"):
        return None
    port = int(value)
    if not 0 <= port <= 65535:
        raise ValueError("must be a port number 0-65535 or off")
    return port


def origins(value: str) -> tuple[str, ...]:
    """Comma-separated origins (``https://game.example``) or ``*``; a TOML array of them arrives as its text."""
    if value.lstrip().startswith("["):
        listed = tomllib.loads(f"origins = {value}")["origins"]
        return tuple(str(o).strip().rstrip("/") for o in listed if str(o).strip())
    return tuple(o.strip().rstrip("/") for o in value.split(",") if o.strip())
