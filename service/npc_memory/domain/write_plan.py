"""Plans a whole StoreMemories batch from what the database holds: pure, so the store can read and write in sets.

The plan is what storing the facts one after another would do (each fact sees the earlier ones of the batch),
computed in memory from three reads — duplicate candidates, slot timelines, explicit targets — and then
written with one statement per kind of change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from uuid import UUID

import numpy as np

from npc_memory.domain.errors import (
    SupersedeBeforeValidAtError,
    SupersedeTargetClosedError,
    UnknownSupersedeTargetError,
)
from npc_memory.domain.model import AnalysedFact, PreparedMemory, StoreOutcome, StoreResult, Tier, Vector
from npc_memory.domain.write_rules import FactText, SlotRow, is_duplicate, is_repeated_turn, place_in_slot

SlotKey = tuple[str, str, str]
"""(subject, subject_id, slot)."""


@dataclass(frozen=True)
class DupCandidate:
    """A valid stored row that may repeat a fact of the batch: same subject, same text or close in meaning."""

    index: int
    """The batch position it was found for."""
    id: UUID
    importance: int
    embedding: Vector | None
    """The row's vector when its text differs from the fact's (then the cosine decides); None for the same text."""
    text: FactText
    slot: str | None
    tier: Tier = Tier.KNOWLEDGE
    valid_at: datetime | None = None
    """When the stored row was said (a source row repeats only at the same moment)."""
    place: tuple[str, int] | None = None
    """The stored turn's dialogue id and position, when it was found at the place of a turn of the batch."""


@dataclass(frozen=True)
class Target:
    """A row named in a fact's ``supersedes`` list, as stored."""

    id: UUID
    valid_at: datetime
    invalid_at: datetime | None


@dataclass
class PlannedInsert:
    """A fact to insert, in its final state after the whole batch."""

    item: PreparedMemory
    importance: int
    invalid_at: datetime | None = None
    superseded_by: UUID | None = None


@dataclass
class WritePlan:
    """Everything the batch changes: results in request order, rows to insert, stored rows to close or raise."""

    results: list[StoreResult] = field(default_factory=list)
    inserts: list[PlannedInsert] = field(default_factory=list)
    closes: dict[UUID, tuple[datetime, UUID]] = field(default_factory=dict)
    """Stored row → (invalid_at, successor id)."""
    raises: dict[UUID, int] = field(default_factory=dict)
    """Stored row → the higher importance a duplicate brought."""


def insert_order(inserts: Sequence[PlannedInsert]) -> list[PlannedInsert]:
    """The inserts with every successor before the rows that point at it (superseded_by is a foreign key).

    Successors always start later in business time, so the chains have no cycles.
    """
    pending = {p.item.id: p for p in inserts}
    ordered: list[PlannedInsert] = []
    while pending:
        ready = [p for p in pending.values() if p.superseded_by not in pending]
        for p in ready:
            del pending[p.item.id]
        ordered += ready
    return ordered


def slot_allows(new_slot: str | None, old_slot: str | None) -> bool:
    """Whether a row in ``old_slot`` can be a duplicate of a fact naming ``new_slot``.

    A fact without a slot is covered by the same fact in any slot; a fact that sets a slot also asserts the
    slot's current value, so only a row of that slot can stand in for it.
    """
    return new_slot is None or new_slot == old_slot


def slot_key(item: AnalysedFact) -> SlotKey | None:
    """The slot timeline a fact belongs to, if it names a slot."""
    fact = item.fact
    return (fact.subject.value, fact.subject_id, fact.slot) if fact.slot is not None else None


def repeats_only_itself(item: AnalysedFact) -> bool:
    """Whether the fact is raw source (tier source): a duplicate only of its own text said within ``SAME_TURN`` of it.

    A turn of a stated dialogue is a duplicate only of the turn stored at its place (``place_of``).
    """
    return item.fact.tier is Tier.SOURCE and item.fact.place is None


def place_of(item: AnalysedFact) -> tuple[str, int] | None:
    """A dialogue turn's place (dialogue id, position): a resend there is the stored turn, whatever else is stored."""
    place = item.fact.place
    return None if place is None else (place.dialogue_id, place.position)


class _Planner:
    def __init__(
        self, items: Sequence[PreparedMemory], dups: Sequence[DupCandidate],
        timelines: Mapping[SlotKey, list[SlotRow]], targets: Mapping[UUID, Target], threshold: float,
    ) -> None:
        self.items = items
        self.threshold = threshold
        self.texts = [FactText.of(i.fact.content, i.terms, i.meaning) for i in items]
        self.dups: dict[int, list[DupCandidate]] = {}
        for d in dups:
            self.dups.setdefault(d.index, []).append(d)
        self.stored_importance = {d.id: d.importance for d in dups}
        self.timelines = {k: list(v) for k, v in timelines.items()}
        self.targets = dict(targets)
        self.plan = WritePlan()
        self.by_id: dict[UUID, PlannedInsert] = {}
        self.positions: dict[UUID, int] = {}

    def _closed(self, row_id: UUID) -> bool:
        planned = self.by_id.get(row_id)
        if planned is not None:
            return planned.invalid_at is not None
        return row_id in self.plan.closes

    def _stored_duplicate(self, index: int) -> UUID | None:
        place = place_of(self.items[index])
        if place is not None:
            return next((c.id for c in self.dups.get(index, []) if c.place == place), None)
        best: tuple[tuple[bool, float, datetime], DupCandidate] | None = None
        slot = self.items[index].fact.slot
        for cand in self.dups.get(index, []):
            if cand.place is not None or not slot_allows(slot, cand.slot) or self._closed(cand.id):
                continue
            cosine = self._cosine(index, cand)
            if not self._repeats(index, cand.text, cosine, cand.valid_at):
                continue
            # The same text first, then the closest meaning, then the latest said.
            rank = (cand.text.key == self.texts[index].key, cosine, cand.valid_at or datetime.min.replace(tzinfo=UTC))
            if best is None or rank > best[0]:
                best = (rank, cand)
        return best[1].id if best else None

    def _cosine(self, index: int, cand: DupCandidate) -> float:
        """The candidate's cosine to the fact; the same text counts as 1 whatever its vector (read without it)."""
        if cand.embedding is None:
            return 1.0
        return float(np.dot(self.items[index].embedding, cand.embedding))

    def _batch_duplicate(self, index: int) -> UUID | None:
        item = self.items[index]
        place = place_of(item)
        if place is not None:  # a request's turns have distinct places
            return next((p.item.id for p in self.plan.inserts if place_of(p.item) == place), None)
        for planned in self.plan.inserts:
            other = planned.item
            if place_of(other) is not None or planned.invalid_at is not None or (
                other.fact.subject, other.fact.subject_id) != (item.fact.subject, item.fact.subject_id
            ) or not slot_allows(item.fact.slot, other.fact.slot):
                continue
            cosine = float(np.dot(item.embedding, other.embedding))
            if self._repeats(index, self.texts[self.positions[other.id]], cosine, other.valid_at):
                return other.id
        return None

    def _repeats(self, index: int, old: FactText, cosine: float, old_at: datetime | None) -> bool:
        """The duplicate rule: a source row repeats only itself at the same moment, other tiers by meaning."""
        item = self.items[index]
        if repeats_only_itself(item):
            return old_at is not None and is_repeated_turn(self.texts[index], item.valid_at, old, old_at)
        return is_duplicate(self.texts[index], old, cosine, self.threshold)

    def _keep_higher_importance(self, row_id: UUID, importance: int) -> None:
        planned = self.by_id.get(row_id)
        if planned is not None:
            planned.importance = max(planned.importance, importance)
        elif importance > self.plan.raises.get(row_id, self.stored_importance[row_id]):
            self.plan.raises[row_id] = importance

    def _close(self, row_id: UUID, invalid_at: datetime, successor: UUID) -> None:
        planned = self.by_id.get(row_id)
        if planned is not None:
            planned.invalid_at, planned.superseded_by = invalid_at, successor
        else:
            self.plan.closes[row_id] = (invalid_at, successor)
        for rows in self.timelines.values():
            for k, row in enumerate(rows):
                if row.id == row_id:
                    rows[k] = SlotRow(row.id, row.valid_at, invalid_at)

    def _explicit(self, index: int, item: PreparedMemory, already: list[UUID]) -> list[UUID]:
        closed: list[UUID] = []
        for j, target_id in enumerate(item.fact.supersedes):
            if target_id in already or target_id in closed:
                continue
            target = self.targets.get(target_id)
            if target is None:
                raise UnknownSupersedeTargetError(index, j, target_id)
            if target.invalid_at is not None or target_id in self.plan.closes:
                raise SupersedeTargetClosedError(index, j, target_id)
            if target.valid_at > item.valid_at:
                raise SupersedeBeforeValidAtError(index, j, target_id)
            self._close(target_id, item.valid_at, item.id)
            closed.append(target_id)
        return closed

    def step(self, index: int) -> StoreResult:
        item = self.items[index]
        dup = self._stored_duplicate(index) or self._batch_duplicate(index)
        if dup is not None:
            self._keep_higher_importance(dup, item.fact.importance)
            return StoreResult(dup, StoreOutcome.DUPLICATE)
        planned = PlannedInsert(item, item.fact.importance)
        superseded: list[UUID] = []
        key = slot_key(item)
        if key is not None:
            timeline = self.timelines.setdefault(key, [])
            placement = place_in_slot(timeline, item.valid_at)
            if placement.successor is not None:
                planned.invalid_at = placement.successor.valid_at
                planned.superseded_by = placement.successor.id
            if placement.close is not None:
                self._close(placement.close.id, item.valid_at, item.id)
                superseded.append(placement.close.id)
            timeline.append(SlotRow(item.id, item.valid_at, planned.invalid_at))
        self.plan.inserts.append(planned)
        self.by_id[item.id] = planned
        self.positions[item.id] = index
        superseded += self._explicit(index, item, superseded)
        if planned.superseded_by is not None:
            return StoreResult(item.id, StoreOutcome.HISTORICAL, tuple(superseded))
        outcome = StoreOutcome.SUPERSEDED if superseded else StoreOutcome.CREATED
        return StoreResult(item.id, outcome, tuple(superseded))


def plan_batch(
    items: Sequence[PreparedMemory], dups: Sequence[DupCandidate], timelines: Mapping[SlotKey, list[SlotRow]],
    targets: Mapping[UUID, Target], threshold: float,
) -> WritePlan:
    """What storing ``items`` in order does, given the stored rows that can matter to them.

    Raises UnknownSupersedeTargetError, SupersedeTargetClosedError or SupersedeBeforeValidAtError for a bad
    ``supersedes`` entry; nothing is written then, since the plan is made before any write.
    """
    planner = _Planner(items, dups, timelines, targets, threshold)
    planner.plan.results = [planner.step(i) for i in range(len(items))]
    return planner.plan
