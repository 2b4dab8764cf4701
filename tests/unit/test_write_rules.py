"""Pure write rules: slot timeline placement, the duplicate guard, the batch planner and the retention rule."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from npc_memory.domain.errors import (
    SupersedeBeforeValidAtError,
    SupersedeTargetClosedError,
    UnknownSupersedeTargetError,
)
from npc_memory.domain.model import ContentType, NewMemory, PreparedMemory, Speaker, StoreOutcome, Subject
from npc_memory.domain.retention import RetentionPolicy, RetentionRow, to_retire
from npc_memory.domain.write_plan import DupCandidate, Target, plan_batch
from npc_memory.domain.write_rules import (
    FactText,
    SlotRow,
    content_key,
    is_duplicate,
    place_in_slot,
    request_fingerprint,
)

DAY = datetime(2025, 1, 1, tzinfo=UTC)


def day(n: int) -> datetime:
    return DAY + timedelta(days=n - 1)


def row(valid: int, invalid: int | None = None) -> SlotRow:
    return SlotRow(uuid.uuid4(), day(valid), day(invalid) if invalid is not None else None)


def test_first_fact_of_a_slot_closes_nothing() -> None:
    """An empty timeline: nothing to close, no successor."""
    placement = place_in_slot([], day(1))
    assert placement.close is None
    assert placement.successor is None


def test_newer_fact_closes_the_valid_version() -> None:
    """Day 30 after a valid day-1 fact closes the day-1 fact and has no successor."""
    cat = row(1)
    placement = place_in_slot([cat], day(30))
    assert placement.close == cat
    assert placement.successor is None


def test_back_dated_fact_never_closes_a_newer_one() -> None:
    """A fact valid before every version becomes history ending at the first version; nothing is closed."""
    cat = row(1)
    placement = place_in_slot([cat], day(-5))
    assert placement.close is None
    assert placement.successor == cat


def test_fact_between_two_versions_is_inserted_into_the_timeline() -> None:
    """Day 15 between day 1 (closed at 30) and day 30: day 1 now ends at 15, the new fact ends at day 30."""
    cat, dog = row(1, 30), row(30)
    placement = place_in_slot([dog, cat], day(15))
    assert placement.close == cat
    assert placement.successor == dog


def test_version_that_ended_before_the_fact_is_not_reclosed() -> None:
    """An earlier version already closed (invalidated range) before the new valid_at is left alone."""
    old = row(1, 5)
    placement = place_in_slot([old], day(10))
    assert placement.close is None
    assert placement.successor is None


def test_duplicate_needs_same_ordered_terms_and_signature_above_the_threshold() -> None:
    """Equal text merges at any cosine; otherwise cosine, ordered terms and meaning signature must all agree."""
    base = FactText.of("고양이를 좋아함", ["고양이", "좋아하다"], [])
    assert is_duplicate(base, FactText.of(" 고양이를  좋아함. ", ["x"], ["not"]), 0.1, 0.93)
    assert is_duplicate(base, FactText.of("고양이를 좋아한다", ["고양이", "좋아하다"], []), 0.98, 0.93)
    assert not is_duplicate(base, FactText.of("고양이를 좋아한다", ["고양이", "좋아하다"], []), 0.92, 0.93)
    assert not is_duplicate(base, FactText.of("고양이를 싫어함", ["고양이", "싫어하다"], []), 0.99, 0.93)
    assert not is_duplicate(base, FactText.of("고양이를 안 좋아함", ["고양이", "좋아하다"], ["not"]), 0.99, 0.93)
    assert not is_duplicate(base, FactText.of("고양이를 좋아했음", ["고양이", "좋아하다"], None), 0.99, 0.93)
    swapped = FactText.of("로코가 레티아를 좋아함", ["로코", "레티아", "좋아하다"], [])
    original = FactText.of("레티아가 로코를 좋아함", ["레티아", "로코", "좋아하다"], [])
    assert not is_duplicate(original, swapped, 0.99, 0.93)


def test_content_key_normalises_width_case_spacing_and_edge_punctuation() -> None:
    """Repeats that differ only in form have the same key."""
    assert content_key("  \uff21\uff22\uff23   고양이!! ") == content_key("abc 고양이")


def _item(content: str, *, slot: str | None = None, valid: int = 1, vec: list[float] | None = None,
          supersedes: tuple[uuid.UUID, ...] = (), importance: int = 5) -> PreparedMemory:
    fact = NewMemory(Speaker.USER, Subject.USER, "user", ContentType.FACT, content, slot=slot,
                     supersedes=supersedes, importance=importance)
    v = np.asarray(vec or [1.0, 0.0], dtype=np.float32)
    return PreparedMemory(uuid.uuid4(), fact, day(valid), tuple(content.split()), content_key(content), (),
                          embedding=v / np.linalg.norm(v), embedding_model="m")


def test_exact_repeat_within_a_batch_is_a_duplicate_of_the_first_and_keeps_the_higher_importance() -> None:
    """The second copy returns the first's id; the first is inserted with the higher importance."""
    a, b = _item("고양이 좋아함", importance=3), _item("고양이 좋아함", importance=9)
    plan = plan_batch([a, b], [], {}, {}, 0.93)
    assert [r.outcome for r in plan.results] == [StoreOutcome.CREATED, StoreOutcome.DUPLICATE]
    assert plan.results[1].memory_id == a.id
    assert [p.importance for p in plan.inserts] == [9]


def test_same_slot_twice_in_a_batch_supersedes_within_the_batch() -> None:
    """Day 1 then day 30 in one batch: the first is inserted already closed by the second."""
    cat, dog = _item("고양이", slot="pet", valid=1), _item("강아지", slot="pet", valid=30, vec=[0.0, 1.0])
    plan = plan_batch([cat, dog], [], {}, {}, 0.93)
    assert plan.results[1].outcome == StoreOutcome.SUPERSEDED
    assert plan.results[1].superseded_ids == (cat.id,)
    first = plan.inserts[0]
    assert (first.invalid_at, first.superseded_by) == (day(30), dog.id)


def test_stored_duplicate_closed_earlier_in_the_batch_is_not_a_duplicate() -> None:
    """A row the batch itself supersedes no longer counts as the valid copy of a later fact."""
    stored = uuid.uuid4()
    dog = _item("강아지", valid=30, vec=[0.0, 1.0], supersedes=(stored,))
    cat = _item("고양이", valid=30)
    dups = [DupCandidate(1, stored, 5, None, FactText.of("고양이", ["고양이"], []), None)]
    plan = plan_batch([dog, cat], dups, {}, {stored: Target(stored, day(1), None)}, 0.93)
    assert [r.outcome for r in plan.results] == [StoreOutcome.SUPERSEDED, StoreOutcome.CREATED]
    assert plan.closes == {stored: (day(30), dog.id)}


def test_slotted_fact_is_not_a_duplicate_of_the_same_text_outside_its_slot() -> None:
    """Setting a slot asserts the slot's value, so a copy without that slot does not stand in for it."""
    stored = uuid.uuid4()
    dups = [DupCandidate(0, stored, 5, None, FactText.of("고양이", ["고양이"], []), None)]
    plan = plan_batch([_item("고양이", slot="pet")], dups, {}, {}, 0.93)
    assert plan.results[0].outcome == StoreOutcome.CREATED
    plan = plan_batch([_item("고양이")], dups, {}, {}, 0.93)
    assert plan.results[0].outcome == StoreOutcome.DUPLICATE


def test_bad_supersedes_targets_fail_the_plan() -> None:
    """Unknown, closed and newer targets each fail the plan, naming the fact and the supersedes entry."""
    unknown, closed, older, newer = uuid.uuid4(), uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    with pytest.raises(UnknownSupersedeTargetError) as unknown_err:
        plan_batch([_item("a"), _item("b", supersedes=(unknown,))], [], {}, {}, 0.93)
    assert (unknown_err.value.index, unknown_err.value.position, unknown_err.value.target) == (1, 0, unknown)
    with pytest.raises(SupersedeTargetClosedError) as closed_err:
        plan_batch([_item("a", supersedes=(closed,))], [], {}, {closed: Target(closed, day(1), day(2))}, 0.93)
    assert (closed_err.value.index, closed_err.value.position) == (0, 0)
    with pytest.raises(SupersedeBeforeValidAtError) as newer_err:
        plan_batch([_item("a", valid=5, supersedes=(older, newer))], [], {},
                   {older: Target(older, day(1), None), newer: Target(newer, day(9), None)}, 0.93)
    assert (newer_err.value.index, newer_err.value.position, newer_err.value.target) == (0, 1, newer)


def test_slot_and_explicit_supersedes_of_the_same_row_close_it_once() -> None:
    """Naming the slot's current version in supersedes too is not an error."""
    old = row(1)
    item = _item("강아지", slot="pet", valid=30, supersedes=(old.id,))
    plan = plan_batch([item], [], {("user", "user", "pet"): [old]}, {old.id: Target(old.id, day(1), None)}, 0.93)
    assert plan.results[0].superseded_ids == (old.id,)


def test_retention_retires_least_important_then_oldest_and_spares_the_floor() -> None:
    """Over the limit, the lowest importance goes first, the oldest among equals; the floor is never touched."""
    rows = [RetentionRow(uuid.uuid4(), imp, day(d)) for imp, d in [(2, 5), (2, 1), (5, 1), (9, 1), (3, 9), (8, 1)]]
    retired = to_retire(rows, RetentionPolicy(max_valid=3, importance_floor=8))
    assert retired == [rows[1].id, rows[0].id, rows[4].id]
    assert to_retire(rows, RetentionPolicy(max_valid=1, importance_floor=3)) == [rows[1].id, rows[0].id]
    assert to_retire(rows, RetentionPolicy(max_valid=0)) == []


def test_request_fingerprint_changes_with_the_request() -> None:
    """The same facts hash the same; a changed content or importance hashes differently."""
    a = [_item("고양이").fact]
    assert request_fingerprint(a) == request_fingerprint([_item("고양이").fact])
    assert request_fingerprint(a) != request_fingerprint([_item("강아지").fact])
    assert request_fingerprint(a) != request_fingerprint([_item("고양이", importance=6).fact])
