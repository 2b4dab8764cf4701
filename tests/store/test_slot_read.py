"""A slot's read brings only the versions placing a batch can touch, and the placements match the whole timeline's.

A slot set every day ("호감도") once had every store read and place among all its versions (store/writes.py
``SLOT_TIMELINES``). Each store here is checked against ``place_in_slot`` over every version read straight from the
table: what the new fact closes, and which newer version it stays the history of.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import psycopg
from npc_memory.domain.model import ContentType, NewMemory, Scope, Speaker, StoreOutcome, Subject
from npc_memory.domain.write_rules import SlotRow, place_in_slot
from npc_memory.embedding.base import normalise
from npc_memory.engine import MemoryEngine
from npc_memory.store.compiled import compile_statement
from npc_memory.store.writes import SLOT_TIMELINES, scope_params

T0 = datetime(2026, 2, 1, 9, tzinfo=UTC)
DAYS = 20


def _versions(url: str, scope: Scope) -> list[SlotRow]:
    """Every version of the scope's slot, as the whole timeline stands (closed by supersession or open)."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT id, valid_at, invalid_at FROM user_memories WHERE user_id = %s AND heroine_id = %s "
            "AND slot = 'affection' AND (close_reason IS NULL OR close_reason = 'superseded')",
            (scope.user_id, scope.heroine_id)).fetchall()
    return [SlotRow(*r) for r in rows]


def _read(url: str, scope: Scope, at: datetime) -> list[SlotRow]:
    """What the write path's slot read returns for a fact of the slot at ``at``."""
    statement = compile_statement(SLOT_TIMELINES)
    with psycopg.connect(url) as conn, psycopg.RawCursor(conn) as cur:
        cur.execute(statement.query, statement.args(scope_params(scope) | {"slots": ["affection"], "froms": [at]}))
        return [SlotRow(r[0], r[4], r[5]) for r in cur.fetchall()]


async def test_a_slot_set_every_day_reads_and_places_as_its_whole_timeline(engine: MemoryEngine, database_url: str,
                                                                          scope: Scope) -> None:
    """Appended, back-dated into the middle, before the first, and two in one batch."""
    rng = np.random.default_rng(51)
    vectors = iter(normalise(rng.standard_normal((DAYS + 10, 384))))

    def set_to(value: int, at: datetime) -> NewMemory:
        return NewMemory(Speaker.HEROINE, Subject.HEROINE, "letia", ContentType.FACT, f"호감도는 {value}이다",
                         slot="affection", valid_at=at, embedding=next(vectors))

    for d in range(DAYS):
        await engine.store(scope, [set_to(d, T0 + timedelta(days=d))])
    assert len(_read(database_url, scope, T0 + timedelta(days=DAYS))) == 1  # the version in force, nothing more
    for value, at in ((100, T0 + timedelta(days=DAYS + 1)), (101, T0 + timedelta(days=5, hours=12)),
                      (102, T0 - timedelta(days=3)), (103, T0 + timedelta(days=11))):
        placement = place_in_slot(_versions(database_url, scope), at)
        (result,) = await engine.store(scope, [set_to(value, at)])
        closed = (placement.close.id,) if placement.close is not None else ()
        assert result.superseded_ids == closed
        want = StoreOutcome.HISTORICAL if placement.successor is not None else (
            StoreOutcome.SUPERSEDED if closed else StoreOutcome.CREATED)
        assert result.outcome is want
    first, second = T0 + timedelta(days=2, hours=6), T0 + timedelta(days=DAYS + 5)
    before = _versions(database_url, scope)
    results = await engine.store(scope, [set_to(104, first), set_to(105, second)])
    early = place_in_slot(before, first)
    assert early.close is not None
    assert results[0].superseded_ids == (early.close.id,)
    assert results[0].outcome is StoreOutcome.HISTORICAL
    latest = max(before, key=lambda r: (r.valid_at, str(r.id)))
    assert results[1].superseded_ids == (latest.id,)
    assert results[1].outcome is StoreOutcome.SUPERSEDED
