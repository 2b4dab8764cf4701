"""Opaque page tokens for ListMemories: a keyset position (valid_at, id), base64-encoded."""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

# Our tokens are ~100 characters; the cap keeps a hostile token from costing a deep JSON parse.
MAX_TOKEN_CHARS = 256


class BadPageTokenError(ValueError):
    """The token was not made by this service."""


@dataclass(frozen=True)
class Cursor:
    """The last row of the previous page."""

    valid_at: datetime
    id: UUID


def encode_cursor(cursor: Cursor) -> str:
    """The page token for the page after ``cursor``."""
    raw = json.dumps({"v": cursor.valid_at.isoformat(), "i": str(cursor.id)}).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(token: str) -> Cursor:
    """Parse a page token; raise BadPageTokenError if it is not one of ours."""
    if len(token) > MAX_TOKEN_CHARS:
        raise BadPageTokenError(f"longer than {MAX_TOKEN_CHARS} characters")
    try:
        data = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except (binascii.Error, ValueError) as exc:
        raise BadPageTokenError(str(exc)) from exc
    # Any JSON decodes; only our shape is a position (UUID(5) raises AttributeError, not ValueError).
    if not isinstance(data, dict) or not isinstance(data.get("v"), str) or not isinstance(data.get("i"), str):
        raise BadPageTokenError("not a position")
    try:
        cursor = Cursor(datetime.fromisoformat(data["v"]), UUID(data["i"]))
    except ValueError as exc:
        raise BadPageTokenError(str(exc)) from exc
    if cursor.valid_at.tzinfo is None:
        raise BadPageTokenError("time without a time zone")
    return cursor
