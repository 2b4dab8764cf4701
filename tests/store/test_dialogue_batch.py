"""A request that reads as a dialogue gets the turns' treatment whatever its tier (domain/dialogue.py)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from npc_memory.cli import build_parser
from npc_memory.config import WriteConfig, load_config
from npc_memory.domain.dialogue import asks, dialogue_batch, embedding_texts, turn_flags
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
from test_dialogue_turns import stored_vector

DAY = datetime(2024, 8, 3, tzinfo=UTC)
WINDOW = timedelta(minutes=30)
SESSION = [("heroine", "경주 다녀왔다며? 언제 갔었어?"), ("user", "응, 지난 화요일에!"),
           ("heroine", "ㅋㅋ 좋았겠다"), ("user", "ㅋㅋ 그러게"), ("heroine", "다음엔 나도 데려가"),
           ("user", "그래 꼭 같이 가자"), ("heroine", "약속한 거다?"), ("user", "응 약속!")]
N = WriteConfig.dialogue_batch_min


def line(speaker: str, content: str, at: datetime | None = DAY, **kw: object) -> NewMemory:
    """A fact as a client that names no tier sends it (knowledge)."""
    who = Speaker(speaker)
    return NewMemory(who, Subject.USER if who is Speaker.USER else Subject.HEROINE,
                     "user" if who is Speaker.USER else "letia", ContentType.FACT, content, valid_at=at,
                     **kw)  # type: ignore[arg-type]


def session() -> list[NewMemory]:
    return [line(s, c) for s, c in SESSION]


def test_a_request_of_turns_taken_by_both_speakers_is_a_dialogue() -> None:
    """Eight short lines, the speaker changing between most: a dialogue; tidy requests are not."""
    assert N == 8
    assert dialogue_batch(session(), N)
    assert not dialogue_batch(session()[:7], N)
    assert not dialogue_batch(session(), 0)
    one_speaker = [line("user", c) for _, c in SESSION]
    assert not dialogue_batch(one_speaker, N)
    # Speakers changing at 3 of 7 gaps (below half): notes that happen to name both, not a conversation.
    blocks = [line("user" if i < 2 or 4 <= i < 6 else "heroine", c) for i, (_, c) in enumerate(SESSION)]
    assert not dialogue_batch(blocks, N)
    with_slot = [*session()[:7], line("user", "요즘은 녹차만 마셔", slot="drink")]
    assert not dialogue_batch(with_slot, N)
    gist = [*session()[:7], line("user", "여행", tier=Tier.GIST)]
    assert not dialogue_batch(gist, N)
    long = [*session()[:7], line("user", "가" * 401)]
    assert not dialogue_batch(long, N)
    assert turn_flags(one_speaker, N) == [False] * 8
    assert turn_flags(session(), N) == [True] * 8


def test_every_turn_of_a_session_at_one_moment_takes_the_previous_in_request_order() -> None:
    """The held-out client's shape: one valid_at for the session; the request's order says who spoke first."""
    facts = session()
    texts = embedding_texts(facts, turn_flags(facts, N), DAY, WINDOW, None)
    assert texts[1] == f"{SESSION[0][1]}\n{SESSION[1][1]}"
    assert texts[0] == SESSION[0][1]
    with_answer = embedding_texts(facts, turn_flags(facts, N), DAY, WINDOW, None, with_answer=True)
    assert with_answer[0] == f"{SESSION[0][1]}\n{SESSION[1][1]}"
    assert with_answer[6] == f"{texts[6]}\n{SESSION[7][1]}"
    others = [i for i in range(len(facts)) if i not in (0, 6)]
    assert [with_answer[i] for i in others] == [texts[i] for i in others]
    assert asks("그거 언제야?!")
    assert asks("Why?)")
    assert not asks("응, 지난 화요일에!")


async def test_a_knowledge_dialogue_keeps_its_repeats_and_embeds_with_context(
    engine: MemoryEngine, scope: Scope, database_url: str,
) -> None:
    """Two sessions with the same lines: all kept, each with its context; a search shows a line once.

    With dialogue_batch_min 0 the knowledge rule merges the second session into the first.
    """
    first = await engine.store(scope, session())
    second = await engine.store(scope, [line(s, c, DAY + timedelta(days=7)) for s, c in SESSION])
    assert all(r.outcome is StoreOutcome.CREATED for r in first + second)
    stored = await stored_vector(database_url, scope, "ㅋㅋ 좋았겠다")
    context, alone = await engine.embedder.embed_passages([f"나: {SESSION[1][1]}\nLetia: {SESSION[2][1]}",
                                                           SESSION[2][1]])
    assert float(np.dot(stored, context)) > 0.999 > float(np.dot(stored, alone))
    query = SearchQuery(scope=scope, text="응, 지난 화요일에!", limit=10, weights=Weights(),
                        now=DAY + timedelta(days=8))
    found = [h.memory.content for h in await engine.search(query)]
    assert sorted(found) == sorted(c for _, c in SESSION)
    off = replace(engine, write_settings=replace(engine.write_settings, dialogue_batch_min=0))
    other = Scope(scope.user_id + "-off", scope.heroine_id)
    await off.store(other, session())
    again = await off.store(other, [line(s, c, DAY + timedelta(days=7)) for s, c in SESSION])
    assert all(r.outcome is StoreOutcome.DUPLICATE for r in again)


def test_dialogue_batch_settings_are_configurable() -> None:
    """dialogue_batch_min defaults to 8, 0 turns it off, a negative value is refused; the answer context is on."""
    flags = vars(build_parser().parse_args(["serve"]))
    assert load_config(flags, {}).write.dialogue_batch_min == WriteConfig.dialogue_batch_min == 8
    assert load_config(flags, {"NPC_MEMORY_DIALOGUE_BATCH_MIN": "0"}).write.dialogue_batch_min == 0
    with pytest.raises(ConfigError, match="dialogue_batch_min"):
        load_config(flags, {"NPC_MEMORY_DIALOGUE_BATCH_MIN": "-1"})
    assert load_config(flags, {}).write.dialogue_context_answer
    assert not load_config(flags, {"NPC_MEMORY_DIALOGUE_CONTEXT_ANSWER": "false"}).write.dialogue_context_answer
    assert load_config(flags, {}).write.dialogue_same_voice
    assert not load_config(flags, {"NPC_MEMORY_DIALOGUE_SAME_VOICE": "false"}).write.dialogue_same_voice
    assert load_config(flags, {}).write.dialogue_repeated_lines
    assert not load_config(flags, {"NPC_MEMORY_DIALOGUE_REPEATED_LINES": "0"}).write.dialogue_repeated_lines
