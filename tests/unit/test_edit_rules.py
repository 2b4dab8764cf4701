"""Pure edit rules (domain/edit_rules.py), without a database: closing a memory and versioning a content edit."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from npc_memory.domain.edit_rules import check_close, next_version, version_fact
from npc_memory.domain.errors import (
    CloseBeforeValidAtError,
    EditOfClosedMemoryError,
    MemoryAlreadyClosedError,
    VersionBeforeValidAtError,
)
from npc_memory.domain.model import ContentType, Memory, PreparedMemory, Scope, Speaker, Subject, Tier

DAY = datetime(2025, 1, 1, tzinfo=UTC)


def day(n: int) -> datetime:
    return DAY + timedelta(days=n - 1)


def memory(valid: int = 5, invalid: int | None = None, **kw: object) -> Memory:
    """A stored letia memory about the player, valid from ``valid`` (closed at ``invalid`` if given)."""
    base = Memory(
        id=uuid.uuid4(), scope=Scope("p", "letia"), speaker=Speaker.USER, subject=Subject.USER, subject_id="user",
        content_type=ContentType.PREFERENCE, content="고양이를 좋아함", importance=6, tier=Tier.KNOWLEDGE,
        slot="pet", metadata={"scene": 3}, valid_at=day(valid), invalid_at=day(invalid) if invalid else None,
        created_at=day(valid), updated_at=day(valid), superseded_by=None, close_reason=None,
        embedding_model="multilingual-e5-small",
    )
    return replace(base, **kw)  # type: ignore[arg-type]


def edit(current: Memory, content: str, valid: int) -> PreparedMemory:
    """A content edit prepared from ``current`` as the engine does before taking the lock."""
    fact = version_fact(current, content, day(valid))
    return PreparedMemory(uuid.uuid4(), fact, day(valid), (content,), content, (),
                          embedding=np.ones(2, dtype=np.float32), embedding_model="m")


def test_closing_a_valid_memory_at_or_after_its_start_is_allowed() -> None:
    """At valid_at itself and later: no refusal."""
    current = memory(valid=5)
    check_close(current, day(5))
    check_close(current, day(40))


def test_closing_a_closed_memory_names_when_it_was_closed() -> None:
    """A second close is refused with the memory and its closing time."""
    current = memory(valid=5, invalid=9)
    with pytest.raises(MemoryAlreadyClosedError) as err:
        check_close(current, day(20))
    assert (err.value.memory_id, err.value.closed_at) == (current.id, day(9))


def test_closing_before_the_memory_began_is_refused() -> None:
    """invalid_at before valid_at would give a negative validity range."""
    current = memory(valid=5)
    with pytest.raises(CloseBeforeValidAtError) as err:
        check_close(current, day(4))
    assert err.value.memory_id == current.id


def test_version_fact_keeps_everything_but_the_text() -> None:
    """The edit's fact has the memory's speaker, subject, type, importance, tier, slot and metadata."""
    current = memory()
    fact = version_fact(current, "강아지를 좋아함", day(9))
    assert (fact.content, fact.valid_at) == ("강아지를 좋아함", day(9))
    assert (fact.speaker, fact.subject, fact.subject_id, fact.content_type) == (
        current.speaker, current.subject, current.subject_id, current.content_type)
    assert (fact.importance, fact.tier, fact.slot, fact.metadata) == (6, Tier.KNOWLEDGE, "pet", {"scene": 3})


def test_new_version_carries_the_row_as_it_is_under_the_lock() -> None:
    """Fields changed since the edit was prepared (importance, tier, metadata, slot) come from the locked row."""
    read_before = memory()
    locked = replace(read_before, importance=9, tier=Tier.GIST, metadata={"scene": 4}, slot="pet2")
    new = next_version(locked, edit(read_before, "강아지를 좋아함", 9))
    assert new is not None
    carried = (new.fact.importance, new.fact.tier, new.fact.metadata, new.fact.slot)
    assert carried == (9, Tier.GIST, {"scene": 4}, "pet2")
    assert (new.fact.content, new.valid_at) == ("강아지를 좋아함", day(9))


def test_unchanged_content_makes_no_version() -> None:
    """The same text is not a new version, even on a closed memory."""
    assert next_version(memory(), edit(memory(), "고양이를 좋아함", 9)) is None
    assert next_version(memory(invalid=7), edit(memory(), "고양이를 좋아함", 9)) is None


def test_editing_a_closed_memory_is_refused() -> None:
    """Only a valid memory gets a new version."""
    current = memory(valid=5, invalid=7)
    with pytest.raises(EditOfClosedMemoryError) as err:
        next_version(current, edit(current, "강아지를 좋아함", 9))
    assert err.value.memory_id == current.id


def test_a_version_before_the_current_one_is_refused() -> None:
    """The new version may start at the current one's valid_at, not before it."""
    current = memory(valid=5)
    assert next_version(current, edit(current, "강아지를 좋아함", 5)) is not None
    with pytest.raises(VersionBeforeValidAtError):
        next_version(current, edit(current, "강아지를 좋아함", 4))
