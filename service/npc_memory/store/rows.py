"""The column list every memory read selects, and the row → Memory conversion."""

from __future__ import annotations

from typing import Any

from psycopg import sql

from npc_memory.domain.model import CloseReason, ContentType, Memory, Scope, Speaker, Subject, Tier, Visibility

MEMORY_COLUMNS = sql.SQL(
    "m.id, m.user_id, m.heroine_id, m.speaker, m.subject, m.subject_id, m.content_type, m.content,"
    " m.importance, m.tier, m.slot, m.metadata, m.valid_at, m.invalid_at, m.created_at, m.updated_at,"
    " m.superseded_by, m.close_reason, m.embedding_model, m.visibility"
)


def memory_from_row(row: dict[str, Any]) -> Memory:
    """Build the domain value from a row selected with MEMORY_COLUMNS."""
    return Memory(
        id=row["id"],
        scope=Scope(row["user_id"], row["heroine_id"]),
        speaker=Speaker(row["speaker"]),
        subject=Subject(row["subject"]),
        subject_id=row["subject_id"],
        content_type=ContentType(row["content_type"]),
        content=row["content"],
        importance=row["importance"],
        tier=Tier(row["tier"]),
        slot=row["slot"],
        metadata=row["metadata"],
        valid_at=row["valid_at"],
        invalid_at=row["invalid_at"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        superseded_by=row["superseded_by"],
        close_reason=CloseReason(row["close_reason"]) if row["close_reason"] else None,
        embedding_model=row["embedding_model"],
        visibility=Visibility(row["visibility"]),
    )
