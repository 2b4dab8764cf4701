"""A player who saved long ago: the store path's reads look up only the changed rows they pick.

Once a player has saved, each close or raise is a change entry. Every read of every statement once built the scope's
newest entries and joined each back to its row, whatever the statement asked for: a read of a few rows of a player
300 days on looked up 300 changed rows to find them (store/view.py PICKED). A dialogue's turns read is such a read.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import numpy as np
from npc_memory.domain.model import ContentType, NewMemory, Scope, Speaker, Subject, Tier, TurnPlace
from npc_memory.embedding.base import normalise
from npc_memory.engine import MemoryEngine
from npc_memory.store.compiled import compile_statement
from npc_memory.store.dialogue import TURNS
from npc_memory.store.reads import _GET
from npc_memory.store.writes import scope_params
from test_plans import explained, loops_of

OLD = 30
ROW_LOOPS = re.compile(r"on user_memories \w+ .*loops=(\d+)")


async def test_a_saved_players_window_looks_up_no_row_outside_it(engine: MemoryEngine, database_url: str,
                                                                 scope: Scope) -> None:
    """Thirty turns of an old dialogue raised after a save: the read of a new dialogue's turns touches none of them."""
    rng = np.random.default_rng(43)
    now = datetime.now(UTC)
    vectors = normalise(rng.standard_normal((OLD + 3, 384)))
    await engine.create_save_point(scope.user_id, "start")
    old = [NewMemory(Speaker.USER, Subject.USER, "user", ContentType.FACT, f"어제 {i}번째 이야기", tier=Tier.SOURCE,
                     valid_at=now - timedelta(days=1, seconds=i), embedding=vectors[i], place=TurnPlace("old", i))
           for i in range(OLD)]
    old_ids = [r.memory_id for r in await engine.store(scope, old)]
    for memory_id in old_ids:
        await engine.update(scope, memory_id, importance=9)  # after the save: a change entry each
    recent = [NewMemory(Speaker.USER if i % 2 else Speaker.HEROINE, Subject.USER, "user", ContentType.FACT,
                        f"방금 {i}번째 말", tier=Tier.SOURCE, valid_at=now - timedelta(seconds=30 - 10 * i),
                        embedding=vectors[OLD + i], place=TurnPlace("now", i)) for i in range(3)]
    recent_ids = [r.memory_id for r in await engine.store(scope, recent)]
    plan, rows = explained(database_url, compile_statement(TURNS),
                           scope_params(scope) | {"dialogue_id": "now", "first": 0, "last": 5})
    assert [r[0] for r in rows] == recent_ids
    loops = loops_of(plan, ROW_LOOPS)
    assert loops, "\n".join(plan)
    assert max(loops) == 1, "\n".join(plan)

    # The picked changed row still shows its entry's values: the raise made after the save.
    memory = await engine.get(scope, old_ids[0])
    assert memory.importance == 9
    _, got = explained(database_url, _GET, scope_params(scope) | {"id": old_ids[0]})
    assert len(got) == 1
