"""A period named in the query text ("지난달에") shapes the candidates in the one search statement.

``period_search`` is ``off`` (the text is only text), ``candidates`` (the period's best-cosine memories join the
candidate union) or ``first`` (they also rank above every other memory); a request with ``as_of`` asks about
a past state, so its text's period is ignored.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from npc_memory.config import PeriodSearch
from npc_memory.domain.model import (
    USER_SUBJECT_ID,
    ContentType,
    NewMemory,
    Scope,
    SearchQuery,
    Speaker,
    Subject,
    Weights,
)
from npc_memory.engine import MemoryEngine

NOW = datetime(2026, 3, 15, 12, tzinfo=UTC)
LAST_MONTH = datetime(2026, 2, 10, 20, tzinfo=UTC)  # inside "지난달" (February) seen from NOW
QUESTION = "지난달에 고양이한테 뭐 해줬지?"
IN_PERIOD = "동물병원에서 예방접종 맞혔어"
OUTSIDE = (  # closer to the question than the February line, all dated outside February
    "고양이한테 간식 사줬어", "고양이 장난감 새로 사줬어", "고양이 털 빗겨줬어", "고양이 목욕시켜 줬어",
)


def _engine(engine: MemoryEngine, mode: PeriodSearch, per_side: int = 50) -> MemoryEngine:
    return replace(engine, search_settings=replace(engine.search_settings, period_search=mode, candidates=per_side))


def _fact(text: str, importance: int, valid_at: datetime) -> NewMemory:
    return NewMemory(speaker=Speaker.USER, subject=Subject.USER, subject_id=USER_SUBJECT_ID,
                     content_type=ContentType.FACT, content=text, importance=importance, valid_at=valid_at)


async def _store(engine: MemoryEngine, scope: Scope) -> None:
    facts = [_fact(text, 8, NOW - timedelta(days=2 + i)) for i, text in enumerate(OUTSIDE)]
    await engine.store(scope, [*facts, _fact(IN_PERIOD, 1, LAST_MONTH)])


def _query(scope: Scope, **kw: object) -> SearchQuery:
    return SearchQuery(scope=scope, text=QUESTION, limit=10, weights=Weights(), now=NOW, **kw)  # type: ignore[arg-type]


async def test_period_first_ranks_the_named_period_above_closer_memories(engine: MemoryEngine, scope: Scope) -> None:
    """With ``first``, the one February memory leads although four March lines are closer and newer."""
    await _store(engine, scope)
    off = [h.memory.content for h in await _engine(engine, "off").search(_query(scope))]
    first = [h.memory.content for h in await _engine(engine, "first").search(_query(scope))]
    assert off[0] != IN_PERIOD
    assert first[0] == IN_PERIOD
    assert sorted(first) == sorted(off)  # the same memories, reordered


async def test_period_candidates_bring_in_a_memory_no_other_list_finds(engine: MemoryEngine, scope: Scope) -> None:
    """One row per list: the February line (least similar, oldest, least important) only joins via the period."""
    await _store(engine, scope)
    off = [h.memory.content for h in await _engine(engine, "off", per_side=1).search(_query(scope))]
    cand = [h.memory.content for h in await _engine(engine, "candidates", per_side=1).search(_query(scope))]
    assert IN_PERIOD not in off
    assert IN_PERIOD in cand


async def test_as_of_ignores_the_period_in_the_text(engine: MemoryEngine, scope: Scope) -> None:
    """A request with ``as_of`` ranks exactly as with ``period_search`` off."""
    await _store(engine, scope)
    query = _query(scope, as_of=NOW)
    off = [h.memory.id for h in await _engine(engine, "off").search(query)]
    first = [h.memory.id for h in await _engine(engine, "first").search(query)]
    assert first == off


@pytest.mark.parametrize("text", ["고양이한테 뭐 해줬지?", "What did I give the cat?"])
async def test_text_without_a_period_ranks_as_before(engine: MemoryEngine, scope: Scope, text: str) -> None:
    """A question naming no period gets the same hits under every setting."""
    await _store(engine, scope)
    query = replace(_query(scope), text=text)
    off = [h.memory.id for h in await _engine(engine, "off").search(query)]
    first = [h.memory.id for h in await _engine(engine, "first").search(query)]
    assert first == off
