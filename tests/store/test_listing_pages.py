"""ListMemories' pages, read page by page, are every row the listing sees, newest first, each once.

The listing orders and cuts each side of the timeline view apart (store/reads.py): the plain rows of a player who
never saved through the scope index in order, the view's branches for a player who saved. Rows here tie on
valid_at in groups, so the id decides the order within them and the page cursor compares both. The rows each case
must show are read with a plain query of the table (no view), and their order is worked out here.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from npc_memory.domain.model import (
    ContentType,
    Memory,
    MemoryFilter,
    NewMemory,
    Scope,
    Speaker,
    Subject,
    Visibility,
)
from npc_memory.embedding.base import normalise
from npc_memory.engine import MemoryEngine

T0 = datetime(2026, 2, 1, tzinfo=UTC)
ANY = MemoryFilter()

EXPECTED = """
SELECT id FROM user_memories
WHERE user_id = %(user_id)s AND (heroine_id = %(heroine_id)s OR (%(shared)s AND visibility = 'shared'))
  AND (%(closed)s OR invalid_at IS NULL) AND importance >= %(min_importance)s
"""


def _facts(engine: MemoryEngine, n: int, seed: int, visibility: Visibility = Visibility.PRIVATE) -> list[NewMemory]:
    rng = np.random.default_rng(seed)
    vectors = normalise(rng.standard_normal((n, engine.embedder.dim)))
    # 12 distinct times for n rows: most rows share their valid_at with others.
    return [NewMemory(speaker=Speaker.USER, subject=Subject.USER, subject_id="", content_type=ContentType.FACT,
                      content=f"목록 {seed}-{i}: 산책과 편지", importance=int(rng.integers(1, 11)),
                      valid_at=T0 + timedelta(hours=int(rng.integers(0, 12))), embedding=vectors[i],
                      visibility=visibility) for i in range(n)]


async def _walk(engine: MemoryEngine, scope: Scope, size: int, flt: MemoryFilter = ANY,
                closed: bool = False, shared: bool = False) -> list[Memory]:
    """Every page in turn; each page full but the last."""
    seen: list[Memory] = []
    after = None
    while True:
        page, after = await engine.list_page(scope, flt, closed, size, after, include_shared=shared)
        seen += page
        if after is None:
            return seen
        assert len(page) == size


async def _expected(engine: MemoryEngine, scope: Scope, shared: bool, closed: bool, least: int) -> set[uuid.UUID]:
    params = {"user_id": scope.user_id, "heroine_id": scope.heroine_id, "shared": shared, "closed": closed,
              "min_importance": least}
    async with engine.db.connection() as conn:
        cur = await conn.execute(EXPECTED, params)
        return {r["id"] for r in await cur.fetchall()}


@pytest.mark.parametrize("saved", [False, True], ids=["never-saved", "saved"])
async def test_pages_are_every_row_newest_first_once(engine: MemoryEngine, saved: bool) -> None:
    """Own rows, with shared ones, with closed ones, filtered: in every page size, before and after a save."""
    user = f"u-{uuid.uuid4().hex[:8]}"
    scope, other = Scope(user, "letia"), Scope(user, "roco")
    stored = await engine.store(scope, _facts(engine, 90, seed=1))
    await engine.store(other, _facts(engine, 30, seed=2))
    await engine.store(other, _facts(engine, 20, seed=3, visibility=Visibility.SHARED))
    await engine.store(Scope(f"{user}-b", "letia"), _facts(engine, 20, seed=4, visibility=Visibility.SHARED))
    for s in stored[:9]:
        await engine.invalidate(scope, s.memory_id, T0 + timedelta(days=1))
    if saved:
        await engine.create_save_point(user, "slot-1")  # the listing now reads through the view's branches
    cases = [(ANY, False, False), (ANY, False, True), (ANY, True, False), (ANY, True, True),
             (MemoryFilter(min_importance=6), False, False)]
    for flt, closed, shared in cases:
        want = await _expected(engine, scope, shared, closed, flt.min_importance)
        assert len(want) >= 25
        for size in (1, 7, 50, 500):
            got = await _walk(engine, scope, size, flt, closed, shared)
            assert len(got) == len({m.id for m in got})  # no row twice
            assert {m.id for m in got} == want
            assert [(m.valid_at, m.id.int) for m in got] == sorted(((m.valid_at, m.id.int) for m in got), reverse=True)
    assert len({m.valid_at for m in await _walk(engine, scope, 500)}) <= 12  # the times did tie

