"""Edit rules as pure functions: when a memory may be closed, and what a content edit's new version is.

The store reads the current row under its lock, asks these functions, and writes what they answer.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from npc_memory.domain.errors import (
    CloseBeforeValidAtError,
    EditOfClosedMemoryError,
    MemoryAlreadyClosedError,
    SourceImmutableError,
    VersionBeforeValidAtError,
)
from npc_memory.domain.model import Memory, NewMemory, PreparedMemory, Tier


def check_close(current: Memory, invalid_at: datetime) -> None:
    """Allow closing ``current`` at ``invalid_at``: it must still be valid and have begun by then."""
    if current.invalid_at is not None:
        raise MemoryAlreadyClosedError(current.id, current.invalid_at)
    if invalid_at < current.valid_at:
        raise CloseBeforeValidAtError(current.id)


def version_fact(current: Memory, content: str, valid_at: datetime | None) -> NewMemory:
    """The fact a content edit of ``current`` stores: the new text, everything else as the memory has it."""
    return NewMemory(
        speaker=current.speaker, subject=current.subject, subject_id=current.subject_id,
        content_type=current.content_type, content=content, importance=current.importance,
        tier=current.tier, slot=current.slot, valid_at=valid_at, metadata=current.metadata,
        visibility=current.visibility,
    )


def next_version(current: Memory, edit: PreparedMemory) -> PreparedMemory | None:
    """The new version ``edit`` makes of ``current``; None when the content is unchanged (nothing to version).

    ``edit`` was prepared from a read before the write lock, so it takes importance, tier, metadata and slot
    from ``current`` (the row as it is now, under the lock), not from what the caller last read.
    """
    if edit.fact.content == current.content:
        return None
    if current.invalid_at is not None:
        raise EditOfClosedMemoryError(current.id)
    if current.tier is Tier.SOURCE:
        raise SourceImmutableError(current.id)
    if edit.valid_at < current.valid_at:
        raise VersionBeforeValidAtError(current.id)
    fact = replace(edit.fact, importance=current.importance, tier=current.tier,
                   metadata=current.metadata, slot=current.slot)
    return replace(edit, fact=fact)
