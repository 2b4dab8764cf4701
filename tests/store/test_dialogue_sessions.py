"""Answers spread across sessions: a session's hits past the cap wait behind other sessions' (domain/sessions.py)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from uuid import uuid4

import pytest
from npc_memory.cli import build_parser
from npc_memory.config import SearchConfig, load_config
from npc_memory.domain.model import (
    ContentType,
    Memory,
    NewMemory,
    Scope,
    ScoredMemory,
    Scores,
    SearchQuery,
    Speaker,
    Subject,
    Tier,
    Weights,
)
from npc_memory.domain.sessions import session_keys, spread_sessions
from npc_memory.engine import MemoryEngine
from npc_memory.errors import ConfigError

DAY = datetime(2024, 8, 3, 20, 0, tzinfo=UTC)
WINDOW = timedelta(minutes=30)


def hit(name: str, at: datetime) -> ScoredMemory:
    memory = Memory(uuid4(), Scope("u", "letia"), Speaker.USER, Subject.USER, "user", ContentType.FACT, name, 5,
                    Tier.SOURCE, None, {}, at, None, at, at, None, None, "m")
    return ScoredMemory(memory, Scores(0.0, 0.0, 0.0, 0.0, 0.0))


def names(hits: list[ScoredMemory]) -> list[str]:
    return [h.memory.content for h in hits]


def test_sessions_are_runs_of_hits_within_the_window() -> None:
    """Minutes apart: one session; a week apart: another; a chain of 20-minute gaps stays one session."""
    hits = [hit("a", DAY), hit("b", DAY + timedelta(days=7)), hit("c", DAY + timedelta(minutes=20)),
            hit("d", DAY + timedelta(minutes=40)), hit("e", DAY + timedelta(days=7, minutes=1))]
    keys = session_keys(hits, WINDOW)
    assert keys[0] == keys[2] == keys[3] != keys[1] == keys[4]


def test_a_session_past_its_cap_waits_behind_the_other_sessions() -> None:
    """Cap 2: the third and fourth line of the first session come after the other sessions' hits, in rank order."""
    week = timedelta(days=7)
    ranked = [hit("s1-a", DAY), hit("s1-b", DAY), hit("s1-c", DAY), hit("s2-a", DAY + week), hit("s1-d", DAY),
              hit("s3-a", DAY + 2 * week), hit("s2-b", DAY + week)]
    assert names(spread_sessions(ranked, 10, 2, WINDOW)) == [
        "s1-a", "s1-b", "s2-a", "s3-a", "s2-b", "s1-c", "s1-d"]
    assert names(spread_sessions(ranked, 4, 2, WINDOW)) == ["s1-a", "s1-b", "s2-a", "s3-a"]
    assert names(spread_sessions(ranked, 4, 0, WINDOW)) == ["s1-a", "s1-b", "s1-c", "s2-a"]
    one_session = ranked[:3]
    assert names(spread_sessions(one_session, 10, 1, WINDOW)) == ["s1-a", "s1-b", "s1-c"]


async def test_search_with_a_session_cap_shows_the_other_sessions(engine: MemoryEngine, scope: Scope) -> None:
    """Five travel lines in one session and one in another: cap 2 brings the other session into the top 3."""
    def turn(content: str, at: datetime) -> NewMemory:
        return NewMemory(Speaker.USER, Subject.USER, "user", ContentType.FACT, content, tier=Tier.SOURCE, valid_at=at)

    first = ["경주 여행 다녀왔어", "경주 여행 사진 보여줄게", "경주 여행 또 가고 싶다", "경주 여행 너무 좋았어",
             "경주 여행 기념품 샀어"]
    await engine.store(scope, [turn(c, DAY + timedelta(minutes=i)) for i, c in enumerate(first)])
    await engine.store(scope, [turn("부산 여행 다녀왔어", DAY + timedelta(days=9))])
    query = SearchQuery(scope=scope, text="경주 여행", limit=3, weights=Weights(0.0, 0.0, 0.5, 0.5),
                        now=DAY + timedelta(days=10))
    plain = [h.memory.content for h in await engine.search(query)]
    assert "부산 여행 다녀왔어" not in plain
    capped = replace(engine, search_settings=replace(engine.search_settings, session_cap=2))
    found = [h.memory.content for h in await capped.search(query)]
    assert found[2] == "부산 여행 다녀왔어"
    assert found[:2] == plain[:2]


def test_session_cap_is_configurable() -> None:
    """Off (0) by default; an environment value sets it; a negative one is refused."""
    flags = vars(build_parser().parse_args(["serve"]))
    assert load_config(flags, {}).search.session_cap == SearchConfig.session_cap == 0
    assert load_config(flags, {"NPC_MEMORY_SEARCH_SESSION_CAP": "2"}).search.session_cap == 2
    with pytest.raises(ConfigError, match="session_cap"):
        load_config(flags, {"NPC_MEMORY_SEARCH_SESSION_CAP": "-1"})
