"""A memory's version chain as each timeline has it: a later timeline's supersession is not followed."""

from __future__ import annotations

import numpy as np
from npc_memory.domain.model import ContentType, NewMemory, ReadView, Scope, Speaker, Subject
from npc_memory.embedding.base import normalise
from npc_memory.engine import MemoryEngine


def _food(text: str, rng: np.random.Generator) -> NewMemory:
    return NewMemory(Speaker.USER, Subject.USER, "user", ContentType.PREFERENCE, text, slot="favorite_food",
                     embedding=normalise(rng.standard_normal((1, 384)))[0])


async def test_each_timeline_walks_its_own_chain(engine: MemoryEngine, scope: Scope) -> None:
    """A → B before a save; after loading it, B → C in the new timeline: the old one still ends at B."""
    rng = np.random.default_rng(21)
    filler = [NewMemory(Speaker.USER, Subject.USER, "user", ContentType.FACT, f"{i}번째 산책", embedding=v)
              for i, v in enumerate(normalise(rng.standard_normal((40, 384))))]
    await engine.store(scope, filler)
    (a,) = await engine.store(scope, [_food("사과를 제일 좋아함", rng)])
    (b,) = await engine.store(scope, [_food("배를 제일 좋아함", rng)])
    await engine.create_save_point(scope.user_id, "slot-1")
    branch = await engine.load_save_point(scope.user_id, "slot-1")
    (c,) = await engine.store(scope, [_food("귤을 제일 좋아함", rng)])

    live, _ = await engine.chain(scope, a.memory_id, 20, None)
    assert [m.id for m in live] == [a.memory_id, b.memory_id, c.memory_id]
    assert live[1].superseded_by == c.memory_id
    root = branch.parent_id
    assert root is not None
    old, _ = await engine.chain(scope, a.memory_id, 20, None, ReadView(timeline_id=root))
    assert [m.id for m in old] == [a.memory_id, b.memory_id]
    assert old[1].superseded_by is None  # not closed in the timeline the player left
    from_c, _ = await engine.chain(scope, c.memory_id, 20, None)
    assert [m.id for m in from_c] == [a.memory_id, b.memory_id, c.memory_id]
