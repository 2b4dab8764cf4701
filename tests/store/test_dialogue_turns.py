"""Dialogue turns (tier source): embedded with the turn before them, and a repeat on another day kept."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import psycopg
import pytest
from npc_memory.cli import build_parser
from npc_memory.config import WriteConfig, load_config
from npc_memory.domain.dialogue import MAX_TURN_CHARS, StoredTurn, TurnContext, turn_flags
from npc_memory.domain.dialogue import embedding_texts as _texts
from npc_memory.domain.model import (
    ContentType,
    NewMemory,
    Scope,
    SearchQuery,
    Speaker,
    StoreOutcome,
    Subject,
    Tier,
    Weights,
)
from npc_memory.engine import MemoryEngine
from npc_memory.errors import ConfigError
from npc_memory.store.reembed import PAGE, _text

T0 = datetime(2025, 3, 4, 20, 0, tzinfo=UTC)
WINDOW = timedelta(minutes=30)
QUESTION = "경주 다녀왔다며? 언제 갔었어?"
REPLY = "응, 지난 화요일에!"


def embedding_texts(facts: list[NewMemory], now: datetime, window: timedelta, stored: StoredTurn | None) -> list[str]:
    """The texts with the turns as a single request marks them (dialogue batches as the service's default)."""
    return _texts(facts, turn_flags(facts, WriteConfig.dialogue_batch_min), now, window, stored)


def _flags() -> dict[str, object]:
    return vars(build_parser().parse_args(["serve"]))


async def _contents(database_url: str, scope: Scope) -> list[str]:
    async with await psycopg.AsyncConnection.connect(database_url) as conn:
        cur = await conn.execute("SELECT content FROM user_memories WHERE user_id = %s ORDER BY valid_at, created_at",
                                 (scope.user_id,))
        return [r[0] for r in await cur.fetchall()]


def turn(content: str, at: datetime | None, **kw: Any) -> NewMemory:
    return NewMemory(Speaker.USER, Subject.USER, "user", ContentType.FACT, content, tier=kw.pop("tier", Tier.SOURCE),
                     valid_at=at, **kw)


def test_a_turn_is_embedded_with_the_turn_before_it_in_the_batch() -> None:
    """In valid_at order; a knowledge fact and a long text are not turns; a given vector stays, its line is context."""
    facts = [turn(REPLY, T0 + timedelta(minutes=1)), turn(QUESTION, T0),
             turn("고양이를 좋아함", T0 + timedelta(minutes=2), tier=Tier.KNOWLEDGE),
             turn("뭐 먹었어?", T0 + timedelta(minutes=3), embedding=np.zeros(4, dtype=np.float32)),
             turn("가" * (MAX_TURN_CHARS + 1), T0 + timedelta(minutes=4)),
             turn("ㅋㅋ 그러게", T0 + timedelta(minutes=5))]
    texts = embedding_texts(facts, T0, WINDOW, None)
    assert texts[:5] == [f"{QUESTION}\n{REPLY}", QUESTION, "고양이를 좋아함", "뭐 먹었어?", "가" * (MAX_TURN_CHARS + 1)]
    assert texts[5] == "뭐 먹었어?\nㅋㅋ 그러게"


def test_the_stored_turn_is_context_only_within_the_window() -> None:
    """The scope's previous turn counts when said at most the window before; a later turn starts anew."""
    stored = StoredTurn(QUESTION, T0)
    assert embedding_texts([turn(REPLY, T0 + WINDOW)], T0, WINDOW, stored) == [f"{QUESTION}\n{REPLY}"]
    assert embedding_texts([turn(REPLY, T0 + WINDOW + timedelta(seconds=1))], T0, WINDOW, stored) == [REPLY]
    assert embedding_texts([turn(REPLY, T0 + timedelta(minutes=1))], T0, timedelta(0), stored) == [REPLY]
    late = [turn(QUESTION, T0), turn(REPLY, T0 + timedelta(hours=2))]
    assert embedding_texts(late, T0, WINDOW, None) == [QUESTION, REPLY]


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


async def stored_vector(database_url: str, scope: Scope, content: str) -> np.ndarray:
    """The vector stored for a line of the scope's user (read straight from the table)."""
    async with await psycopg.AsyncConnection.connect(database_url) as conn:
        cur = await conn.execute("SELECT embedding::text FROM user_memories WHERE user_id = %s AND content = %s",
                                 (scope.user_id, content))
        row = await cur.fetchone()
    assert row is not None
    return np.array([float(x) for x in row[0].strip("[]").split(",")], dtype=np.float32)


async def test_a_turn_stored_alone_takes_the_previous_stored_turn_as_context(
    engine: MemoryEngine, scope: Scope, database_url: str,
) -> None:
    """One turn per request: the reply's vector is taken over the question and the reply; the content is the reply."""
    await engine.store(scope, [turn(QUESTION, T0)])
    (reply,) = await engine.store(scope, [turn(REPLY, T0 + timedelta(minutes=1))])
    assert reply.outcome is StoreOutcome.CREATED
    stored = await stored_vector(database_url, scope, REPLY)
    # Both lines are the player's: each written after "나: " (dialogue_speaker_label, default name).
    with_context, alone = await engine.embedder.embed_passages([f"나: {QUESTION}\n나: {REPLY}", REPLY])
    assert _cos(stored, with_context) > 0.999 > _cos(stored, alone)
    assert await _contents(database_url, scope) == [QUESTION, REPLY]


async def test_without_context_minutes_a_turn_is_embedded_alone(engine: MemoryEngine, scope: Scope,
                                                                 database_url: str) -> None:
    """dialogue_context_minutes = 0 turns the context off."""
    alone_engine = replace(engine, write_settings=replace(engine.write_settings, dialogue_context_minutes=0))
    await alone_engine.store(scope, [turn(QUESTION, T0), turn(REPLY, T0 + timedelta(minutes=1))])
    (alone,) = await engine.embedder.embed_passages([REPLY])
    assert _cos(await stored_vector(database_url, scope, REPLY), alone) > 0.999


async def test_a_repeated_turn_on_another_day_is_kept_and_a_resend_is_a_duplicate(
    engine: MemoryEngine, scope: Scope, database_url: str,
) -> None:
    """Turns are events: the same line on another day or after another question is stored again."""
    (first,) = await engine.store(scope, [turn(REPLY, T0)])
    (next_day,) = await engine.store(scope, [turn(REPLY, T0 + timedelta(days=1))])
    same_batch = await engine.store(scope, [turn("ㅋㅋ 그러게", T0 + timedelta(days=2)),
                                            turn("ㅋㅋ 그러게", T0 + timedelta(days=2, minutes=1))])
    (resend,) = await engine.store(scope, [turn(REPLY, T0 + timedelta(seconds=5))])
    (as_knowledge,) = await engine.store(scope, [turn(REPLY, T0 + timedelta(days=3), tier=Tier.KNOWLEDGE)])
    assert next_day.outcome is StoreOutcome.CREATED
    assert next_day.memory_id != first.memory_id
    assert [r.outcome for r in same_batch] == [StoreOutcome.CREATED, StoreOutcome.CREATED]
    assert (resend.outcome, resend.memory_id) == (StoreOutcome.DUPLICATE, first.memory_id)
    # A knowledge fact keeps the meaning rule: the same text is a duplicate of the stored turn.
    assert as_knowledge.outcome is StoreOutcome.DUPLICATE
    assert len(await _contents(database_url, scope)) == 4


def test_dialogue_context_minutes_is_configurable_and_not_negative() -> None:
    """Default 30 minutes; an environment value sets it; a negative one is refused. distinct_turns: on, or off."""
    assert load_config(_flags(), {}).write.dialogue_context_minutes == WriteConfig.dialogue_context_minutes == 30.0
    assert load_config(_flags(), {"NPC_MEMORY_DIALOGUE_CONTEXT_MINUTES": "0"}).write.dialogue_context_minutes == 0
    with pytest.raises(ConfigError, match="dialogue_context_minutes"):
        load_config(_flags(), {"NPC_MEMORY_DIALOGUE_CONTEXT_MINUTES": "-1"})
    assert load_config(_flags(), {}).search.distinct_turns
    assert not load_config(_flags(), {"NPC_MEMORY_SEARCH_DISTINCT_TURNS": "false"}).search.distinct_turns


async def test_another_players_or_heroines_turn_is_never_context(
    engine: MemoryEngine, scope: Scope, database_url: str,
) -> None:
    """The stored predecessor is read within the scope only: no other player's or heroine's line leaks in."""
    await engine.store(Scope(scope.user_id + "-other", scope.heroine_id), [turn(QUESTION, T0)])
    await engine.store(Scope(scope.user_id, "roco"), [turn(QUESTION, T0)])
    await engine.store(scope, [turn(REPLY, T0 + timedelta(minutes=1))])
    (alone,) = await engine.embedder.embed_passages([f"나: {REPLY}"])  # labelled, no context
    assert _cos(await stored_vector(database_url, scope, REPLY), alone) > 0.999


async def test_a_line_said_on_many_days_shows_once_in_a_search(engine: MemoryEngine, scope: Scope) -> None:
    """distinct_turns: three days of "ㅋㅋ 그러게" are one hit, the other lines fill the page; off, all three show."""
    days = [turn("ㅋㅋ 그러게", T0 + timedelta(days=d)) for d in range(3)]
    others = [turn(text, T0 + timedelta(days=3, minutes=i)) for i, text in enumerate(["그러게 말이야", "ㅎㅎ 그치"])]
    await engine.store(scope, [*days, *others])
    query = SearchQuery(scope=scope, text="ㅋㅋ 그러게", limit=3, weights=Weights(), now=T0 + timedelta(days=4))
    found = [h.memory.content for h in await engine.search(query)]
    assert found.count("ㅋㅋ 그러게") == 1
    assert len(found) == 3
    plain = replace(engine, search_settings=replace(engine.search_settings, distinct_turns=False))
    assert [h.memory.content for h in await plain.search(query)] == ["ㅋㅋ 그러게"] * 3


async def test_reembed_takes_the_same_previous_turn_as_the_write(engine: MemoryEngine, scope: Scope) -> None:
    """`npc-memory reembed` pages (store/reembed.PAGE) carry each turn's predecessor within the window."""
    await engine.store(scope, [turn(QUESTION, T0), turn(REPLY, T0 + timedelta(minutes=1)),
                               turn("고양이를 좋아함", T0 + timedelta(minutes=2), tier=Tier.KNOWLEDGE),
                               turn("ㅋㅋ 그러게", T0 + timedelta(hours=2))])
    params = {"after_user": scope.user_id[:-1], "after_id": None, "limit": 4, "max_chars": MAX_TURN_CHARS,
              "window": WINDOW}
    async with engine.db.connection() as conn:
        cur = await conn.execute(PAGE, params)
        rows = [r for r in await cur.fetchall() if r["user_id"] == scope.user_id]
    previous = {r["content"]: r["previous"] for r in rows}
    assert previous == {QUESTION: None, REPLY: QUESTION, "고양이를 좋아함": REPLY, "ㅋㅋ 그러게": None}
    # The knowledge note follows a line of the same speaker: not a turn, embedded as its content.
    texts = {r["content"]: _text(r, TurnContext()) for r in rows}
    assert texts == {QUESTION: QUESTION, REPLY: f"{QUESTION}\n{REPLY}", "고양이를 좋아함": "고양이를 좋아함",
                     "ㅋㅋ 그러게": "ㅋㅋ 그러게"}
