"""A player who reloads often: a timeline many loads deep, its lineage stored once, and the rows its view sees.

Each load makes a timeline one deeper than the one it branches from, so a player who reloads before every choice
plays on a timeline hundreds of loads deep. Reads walked the parent links in every statement, one step per load,
and searched the lineage once per row (a save-scummer's search 300 loads deep took 15-17 ms against 2.4 for a
player who never saved, scratch benchmark; docs/guide/game-time.md, "A player who reloads").
"""

from __future__ import annotations

import random
import re
from datetime import UTC, datetime
from itertools import pairwise
from uuid import UUID

import numpy as np
import psycopg
from npc_memory.domain.model import ContentType, Memory, MemoryFilter, NewMemory, Scope, Speaker, Subject
from npc_memory.embedding.base import normalise
from npc_memory.engine import MemoryEngine
from npc_memory.store.filters import filter_params
from npc_memory.store.migrate import migrate
from npc_memory.store.reads import _LISTING
from npc_memory.store.view import view_params
from own_database import separate_database
from test_plans import explained

TIMELINE_READS = re.compile(r"on timelines \w+ .*rows=([\d.]+) loops=(\d+)")
INFINITY = float("inf")


class Model:
    """What a player's live view must show, kept by steps: rows and closes are seen up to each timeline's limit."""

    def __init__(self) -> None:
        self.step = 0
        self.live = 1
        self.parent: dict[int, tuple[int, int]] = {}  # timeline -> (parent, the step of the save it branched at)
        self.slots: dict[str, tuple[int, int]] = {}
        self.rows: dict[UUID, tuple[str, int, int]] = {}  # id -> (text, timeline, step written)
        self.closes: list[tuple[UUID, int, int]] = []  # (row, timeline, step)

    def tick(self) -> int:
        """The next step: every write, close, save and load is one."""
        self.step += 1
        return self.step

    def limits(self) -> dict[int, float]:
        """The live view's lineage: each timeline and the step before which its rows are seen."""
        seen: dict[int, float] = {self.live: INFINITY}
        timeline, limit = self.live, INFINITY
        while timeline in self.parent:
            timeline, at = self.parent[timeline]
            limit = min(limit, at)
            seen[timeline] = limit
        return seen

    def visible(self) -> set[str]:
        """The texts of the rows the live view shows open."""
        limits = self.limits()
        shown = {i: text for i, (text, t, s) in self.rows.items() if t in limits and s < limits[t]}
        for row, t, s in self.closes:
            if t in limits and s < limits[t]:
                shown.pop(row, None)
        return set(shown.values())


async def _listed(engine: MemoryEngine, scope: Scope) -> set[str]:
    """The live view's open rows, listed in one page and in pages of 7: the same rows, newest first, each once."""
    memories, cursor = await engine.list_page(scope, MemoryFilter(), False, 500, None)
    assert cursor is None
    paged: list[Memory] = []
    while True:
        page, cursor = await engine.list_page(scope, MemoryFilter(), False, 7, cursor)
        paged += page
        if cursor is None:
            break
    assert [m.id for m in paged] == [m.id for m in memories]
    assert [(m.valid_at, m.id.int) for m in paged] == sorted(((m.valid_at, m.id.int) for m in paged), reverse=True)
    return {m.content for m in memories}


async def test_a_view_many_loads_deep_shows_its_lineage_and_nothing_else(engine: MemoryEngine, scope: Scope) -> None:
    """Random writes, closes, raises, saves in three slots and loads: every view matches the model, however deep."""
    rng, vectors = random.Random(5), np.random.default_rng(5)
    model = Model()
    loads = 0
    for op in range(150):
        kind = rng.choices(("write", "close", "raise", "save", "load"), (5, 1, 1, 2, 2))[0]
        if kind == "write":
            text = f"{op}번째 기억: 레티아와 {rng.choice(['바다', '숲', '시장', '성'])}에서 {op}번 이야기함"
            fact = NewMemory(Speaker.USER, Subject.USER, "user", ContentType.FACT, text,
                             embedding=normalise(vectors.standard_normal((1, 384)))[0])
            (result,) = await engine.store(scope, [fact])
            model.rows[result.memory_id] = (text, model.live, model.tick())
        elif kind == "close":
            limits = model.limits()
            open_rows = [i for i, (_, t, s) in model.rows.items() if t in limits and s < limits[t]
                         and i not in {c for c, ct, cs in model.closes if ct in limits and cs < limits[ct]}]
            if open_rows:
                row = rng.choice(open_rows)
                await engine.invalidate(scope, row, None)
                model.closes.append((row, model.live, model.tick()))
        elif kind == "raise":  # after a save, an entry: the row is listed with its entry's values
            limits = model.limits()
            seen = [i for i, (_, t, s) in model.rows.items() if t in limits and s < limits[t]]
            if seen:
                await engine.update(scope, rng.choice(seen), importance=rng.randint(1, 10))
                model.tick()
        elif kind == "save":
            slot = rng.choice("abc")
            await engine.create_save_point(scope.user_id, slot)
            model.slots[slot] = (model.live, model.tick())
        elif model.slots:
            slot = rng.choice(sorted(model.slots))
            timeline = await engine.load_save_point(scope.user_id, slot)
            model.parent[timeline.timeline_id] = model.slots[slot]
            model.live = timeline.timeline_id
            model.tick()
            loads += 1
            assert await _listed(engine, scope) == model.visible(), f"after load {loads}, op {op}"
    assert loads >= 20
    assert len(model.limits()) >= 5, "the live timeline should be several loads deep"
    assert await _listed(engine, scope) == model.visible()


async def test_a_view_reads_its_lineage_in_one_look(engine: MemoryEngine, database_url: str, scope: Scope) -> None:
    """A listing of a player 40 loads deep reads one row of the timelines table: the lineage is stored, not walked."""
    vectors = np.random.default_rng(9)
    for i in range(40):
        fact = NewMemory(Speaker.USER, Subject.USER, "user", ContentType.FACT, f"{i}일째: 다시 불러온 날",
                         embedding=normalise(vectors.standard_normal((1, 384)))[0])
        await engine.store(scope, [fact])
        await engine.create_save_point(scope.user_id, "quick")
        await engine.load_save_point(scope.user_id, "quick")
    params = (filter_params(MemoryFilter(), datetime.now(UTC), False) | view_params()
              | {"user_id": scope.user_id, "heroine_id": scope.heroine_id, "limit": 100})
    plan, rows = explained(database_url, _LISTING[False, False], params)
    assert len(rows) == 40
    reads = [float(m.group(1)) * int(m.group(2)) for line in plan if (m := TIMELINE_READS.search(line))]
    assert reads, "\n".join(plan)
    assert sum(reads) == 1, "\n".join(plan)


def test_the_migration_gives_existing_timelines_their_lineage(database_url: str) -> None:
    """Timelines made before migration 0017 get the lineage the parent links give, ascending, limits capped."""
    with separate_database(database_url, "npc_lineage") as url:
        migrate(url, target=16)
        # 2 and 3 branch from the root; 4 from 2; 5 from 4; 6 from 3; ids ascend as loads make them.
        tree = {2: (1, "2026-01-02"), 3: (1, "2026-01-03"), 4: (2, "2026-01-04"), 5: (4, "2026-01-05"),
                6: (3, "2026-01-06")}
        with psycopg.connect(url, autocommit=True) as conn:
            for player in ("p", "q"):
                for timeline, (parent, at) in tree.items():
                    conn.execute("INSERT INTO timelines (user_id, timeline_id, parent_id, branched_at, save_id)"
                                 " VALUES (%s, %s, %s, %s, 's')", (player, timeline, parent, at))
        migrate(url)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("SET timezone = 'UTC'")
            found = {(r[0], r[1]): (r[2], [u[:10] for u in r[3]]) for r in conn.execute(
                "SELECT user_id, timeline_id, lineage, lineage_upto::text[] FROM timelines")}
    for player in ("p", "q"):
        assert found[player, 5] == ([1, 2, 4, 5], ["2026-01-02", "2026-01-04", "2026-01-05", "infinity"])
        assert found[player, 6] == ([1, 3, 6], ["2026-01-03", "2026-01-06", "infinity"])
        assert found[player, 2] == ([1, 2], ["2026-01-02", "infinity"])
        for lineage, _ in (found[player, t] for t in tree):
            assert all(a < b for a, b in pairwise(lineage))
