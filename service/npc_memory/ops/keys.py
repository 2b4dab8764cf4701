"""API keys: sha256 hashes with the RPCs and user-id namespaces each may use, re-read when the file changes."""

from __future__ import annotations

import fnmatch
import hashlib
import hmac
import logging
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from npc_memory.errors import ConfigError

log = logging.getLogger(__name__)

ADMIN_RPCS = frozenset({"ForgetPlayer"})
"""RPCs only admin keys may call; any RPC whose request names no player is admin-only as well."""


def hash_key(key: str) -> str:
    """The sha256 hex digest stored in place of a key (keys are random and long, so a plain hash suffices)."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ApiKey:
    """One key: its name (logged), its hash, and what it may do."""

    name: str
    sha256: str
    rpcs: frozenset[str] = frozenset({"*"})
    """Method names (``SearchMemories``) or ``*`` for every non-admin RPC."""
    user_namespaces: tuple[str, ...] = ("*",)
    """Shell patterns a request's user id must match, e.g. ``game-a:*``."""
    admin: bool = False
    """Admin keys may also call ForgetPlayer and the maintenance RPCs."""

    def allows_rpc(self, method: str, names_player: bool) -> bool:
        """Whether this key may call the method at all."""
        if (method in ADMIN_RPCS or not names_player) and not self.admin:
            return False
        return "*" in self.rpcs or method in self.rpcs

    def allows_user(self, user_id: str) -> bool:
        """Whether the user id lies in one of the key's namespaces."""
        return any(fnmatch.fnmatchcase(user_id, pattern) for pattern in self.user_namespaces)


def _digest(value: str) -> str:
    digest = value.lower()
    if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise ValueError("sha256 must be 64 hex digits")
    return digest


def parse_keys(raw: Mapping[str, Any], where: str) -> tuple[ApiKey, ...]:
    """The ``[[keys]]`` tables of a TOML document."""
    keys = []
    for i, entry in enumerate(raw.get("keys", [])):
        try:
            digest = _digest(str(entry["sha256"]))
            keys.append(ApiKey(
                name=str(entry.get("name", f"key-{i}")), sha256=digest,
                rpcs=frozenset(str(r) for r in entry.get("rpcs", ["*"])),
                user_namespaces=tuple(str(n) for n in entry.get("user_namespaces", ["*"])),
                admin=bool(entry.get("admin", False)),
            ))
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"{where}: keys[{i}]: {exc}") from exc
    return tuple(keys)


class KeyRing:
    """The configured keys; a keys file is re-read whenever its modification time changes (rotation)."""

    def __init__(self, keys: Sequence[ApiKey] = (), path: Path | None = None) -> None:
        self._inline = tuple(keys)
        self._path = path
        self._stamp: float | None = None
        self._from_file: tuple[ApiKey, ...] = ()
        self._refresh()

    @property
    def enabled(self) -> bool:
        """Whether any key is configured (no keys: the service is open)."""
        return bool(self._inline or self._path)

    def _refresh(self) -> None:
        if self._path is None:
            return
        try:
            stamp = self._path.stat().st_mtime_ns
            if stamp == self._stamp:
                return
            self._from_file = parse_keys(tomllib.loads(self._path.read_text(encoding="utf-8")), str(self._path))
            self._stamp = stamp
            log.info("api keys loaded", extra={"keys": len(self._from_file), "file": str(self._path)})
        except (OSError, tomllib.TOMLDecodeError, ConfigError) as exc:
            if self._stamp is None:
                raise ConfigError(f"keys file {self._path}: {exc}") from exc
            # A half-written rotation keeps the previous keys rather than locking everyone out.
            log.warning("keys file unreadable, keeping the previous keys: %s", exc)

    def find(self, presented: str) -> ApiKey | None:
        """The key whose hash matches the presented key, or None."""
        self._refresh()
        digest = hash_key(presented)
        for key in (*self._inline, *self._from_file):
            if hmac.compare_digest(key.sha256, digest):
                return key
        return None
