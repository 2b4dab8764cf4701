"""ExpandMemory links only on evidence: a shared distinctive keyword, never the heroine's name or nearness alone."""

from __future__ import annotations

import uuid

from npc_memory.domain.model import ContentType, NewMemory, Scope, Speaker, Subject
from npc_memory.engine import MemoryEngine

# Ten unrelated facts; the heroine's name is in five of them (the scope: rainy days, cats, spicy food).
UNRELATED = [
    "레티아는 비 오는 날을 좋아한다", "레티아는 고양이를 키운다", "레티아는 매운 음식을 못 먹는다",
    "레티아의 생일은 3월 5일이다", "레티아는 아침마다 빵을 굽는다", "플레이어는 축구를 좋아한다",
    "마을 광장에 분수가 있다", "플레이어의 여동생은 서울에 산다", "여관 주인은 친절하다",
    "검술 대회가 다음 주에 열린다",
]


def _fact(content: str) -> NewMemory:
    return NewMemory(Speaker.USER, Subject.USER, "user", ContentType.FACT, content)


async def test_unrelated_facts_naming_one_heroine_are_not_linked(engine: MemoryEngine) -> None:
    """On a 10-row scope of unrelated facts, expanding each memory links nothing, and a later hop finds nothing."""
    scope = Scope(f"evidence-{uuid.uuid4().hex[:8]}", "letia")
    stored = await engine.store(scope, [_fact(c) for c in UNRELATED])
    for result in stored:
        expansion = await engine.expand(scope, result.memory_id)
        assert [(m.content, link.via) for link, m in expansion.found] == []


async def test_a_shared_distinctive_keyword_links(engine: MemoryEngine) -> None:
    """A fact about the same cat is linked through 고양이 (in 2 of 11 rows), not through 레티아 (in 6)."""
    scope = Scope(f"evidence-{uuid.uuid4().hex[:8]}", "letia")
    stored = await engine.store(scope, [_fact(c) for c in [*UNRELATED, "레티아의 고양이 이름은 나비다"]])
    cat = stored[1].memory_id
    expansion = await engine.expand(scope, cat)
    assert [(m.content, link.via) for link, m in expansion.found] == [("레티아의 고양이 이름은 나비다", "고양이")]
