"""Opaque page tokens for ListMemories: a keyset position (valid_at, id), base64-encoded."""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID


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
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data = json.loads(raw)
        return Cursor(datetime.fromisoformat(data["v"]), UUID(data["i"]))
    except (binascii.Error, ValueError, KeyError, TypeError) as exc:
        raise BadPageTokenError(str(exc)) from exc
