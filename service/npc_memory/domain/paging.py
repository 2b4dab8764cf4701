"""Opaque page tokens: a keyset position, base64-encoded.

(valid_at, id) for ListMemories; (valid_at, created_at, id) for GetMemoryHistory.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from npc_memory.domain.model import Memory

# A page stops at this many bytes of content and metadata (roughly what it costs on the wire) whatever its
# page_size: 500 memories of 2,000 Korean characters were a 3 MB response held in memory until the client read it.
MAX_PAGE_BYTES = 1024 * 1024
ROW_OVERHEAD_BYTES = 200
"""What a memory's ids, enums, times and field tags add to its content on the wire, roughly."""

# Our tokens are ~100 characters; the cap keeps a hostile token from costing a deep JSON parse.
MAX_TOKEN_CHARS = 256


class BadPageTokenError(ValueError):
    """The token was not made by this service."""


@dataclass(frozen=True)
class Cursor:
    """The last row of the previous page."""

    valid_at: datetime
    id: UUID


@dataclass(frozen=True)
class HistoryCursor:
    """The last row of the previous GetMemoryHistory page (history runs oldest first, ties by creation)."""

    valid_at: datetime
    created_at: datetime
    id: UUID


def _encode(fields: dict[str, str]) -> str:
    return base64.urlsafe_b64encode(json.dumps(fields).encode()).decode().rstrip("=")


def _decode(token: str, keys: tuple[str, ...]) -> dict[str, str]:
    """The token's fields, each a string, exactly ``keys``; BadPageTokenError otherwise."""
    if len(token) > MAX_TOKEN_CHARS:
        raise BadPageTokenError(f"longer than {MAX_TOKEN_CHARS} characters")
    try:
        data = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except (binascii.Error, ValueError) as exc:
        raise BadPageTokenError(str(exc)) from exc
    # Any JSON decodes; only our shape is a position (UUID(5) raises AttributeError, not ValueError). The exact
    # key set also keeps a ListMemories token from being read as a history position and the other way round.
    if not isinstance(data, dict) or set(data) != set(keys) or not all(isinstance(data[k], str) for k in keys):
        raise BadPageTokenError("not a position")
    return data


def _time(text: str) -> datetime:
    when = datetime.fromisoformat(text)
    if when.tzinfo is None:
        raise BadPageTokenError("time without a time zone")
    return when


def encode_cursor(cursor: Cursor) -> str:
    """The page token for the page after ``cursor``."""
    return _encode({"v": cursor.valid_at.isoformat(), "i": str(cursor.id)})


def decode_cursor(token: str) -> Cursor:
    """Parse a ListMemories page token; raise BadPageTokenError if it is not one of ours."""
    data = _decode(token, ("v", "i"))
    try:
        return Cursor(_time(data["v"]), UUID(data["i"]))
    except ValueError as exc:  # BadPageTokenError is a ValueError too, and passes through unchanged
        raise BadPageTokenError(str(exc)) from exc


def encode_history_cursor(cursor: HistoryCursor) -> str:
    """The GetMemoryHistory page token for the page after ``cursor``."""
    return _encode({"v": cursor.valid_at.isoformat(), "c": cursor.created_at.isoformat(), "i": str(cursor.id)})


def decode_history_cursor(token: str) -> HistoryCursor:
    """Parse a GetMemoryHistory page token; raise BadPageTokenError if it is not one of ours."""
    data = _decode(token, ("v", "c", "i"))
    try:
        return HistoryCursor(_time(data["v"]), _time(data["c"]), UUID(data["i"]))
    except ValueError as exc:
        raise BadPageTokenError(str(exc)) from exc


def fits_in_bytes(memories: Sequence[Memory], max_bytes: int) -> int:
    """How many of ``memories``, from the first, fit in ``max_bytes`` (always at least one, so paging advances)."""
    used = 0
    for n, m in enumerate(memories):
        used += len(m.content.encode()) + len(json.dumps(m.metadata, ensure_ascii=False).encode()) + ROW_OVERHEAD_BYTES
        if used > max_bytes and n > 0:
            return n
    return len(memories)
