"""The column list every memory read selects, and the row → Memory conversion."""

from __future__ import annotations

from typing import Any

from psycopg import sql

from npc_memory.domain.model import (
    CloseReason,
    ContentType,
    Memory,
    Scope,
    Speaker,
    Subject,
    Tier,
    TurnPlace,
    Visibility,
)

MEMORY_COLUMN_NAMES = (
    "id", "user_id", "heroine_id", "speaker", "subject", "subject_id", "content_type", "content",
    "importance", "tier", "slot", "metadata", "valid_at", "invalid_at", "created_at", "updated_at",
    "superseded_by", "close_reason", "embedding_model", "timeline_id", "visibility", "dialogue_id",
    "dialogue_position", "speaker_name",
)


def memory_columns(table: str) -> sql.Composed:
    """The memory columns of ``table``'s row, in MEMORY_COLUMN_NAMES order."""
    return sql.SQL(", ").join(sql.Identifier(table, n) for n in MEMORY_COLUMN_NAMES)


MEMORY_COLUMNS = memory_columns("m")


def memory_from_row(row: dict[str, Any]) -> Memory:
    """Build the domain value from a row selected with MEMORY_COLUMNS."""
    return Memory(**memory_values(row))


def memory_values(row: dict[str, Any], scope: Scope | None = None) -> dict[str, Any]:
    """Memory's fields by name, from a row selected with MEMORY_COLUMNS (``scope``: the row's, to share)."""
    return {
        "id": row["id"],
        "scope": scope if scope is not None else Scope(row["user_id"], row["heroine_id"]),
        "speaker": Speaker(row["speaker"]),
        "subject": Subject(row["subject"]),
        "subject_id": row["subject_id"],
        "content_type": ContentType(row["content_type"]),
        "content": row["content"],
        "importance": row["importance"],
        "tier": Tier(row["tier"]),
        "slot": row["slot"],
        "metadata": row["metadata"],
        "valid_at": row["valid_at"],
        "invalid_at": row["invalid_at"],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
        "superseded_by": row["superseded_by"],
        "close_reason": CloseReason(row["close_reason"]) if row["close_reason"] else None,
        "embedding_model": row["embedding_model"],
        "timeline_id": row["timeline_id"],
        "visibility": Visibility(row["visibility"]),
        "place": None if row["dialogue_id"] is None else TurnPlace(
            row["dialogue_id"], row["dialogue_position"], row["speaker_name"] or ""),
    }
