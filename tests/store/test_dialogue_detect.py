"""Dialogues stored without our speaker field or one line per request, and which turns take the previous as context."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from npc_memory.cli import build_parser
from npc_memory.config import WriteConfig, load_config
from npc_memory.domain.dialogue import (
    SHORT_TURN_CHARS,
    StoredTurn,
    TurnContext,
    dialogue_batch,
    embedding_texts,
    joins_dialogue,
    may_join,
    name_prefix,
    takes_previous,
    turn_flags,
)
from npc_memory.domain.model import NewMemory, Scope, Speaker, StoreOutcome
from npc_memory.engine import MemoryEngine
from npc_memory.errors import ConfigError
from npc_memory.store.reembed import reembed_all
from test_dialogue_batch import SESSION, line
from test_dialogue_turns import stored_vector

DAY = datetime(2024, 8, 3, tzinfo=UTC)
WINDOW = timedelta(minutes=30)
N = WriteConfig.dialogue_batch_min


def transcript() -> list[NewMemory]:
    """The session as a client without our speaker field stores it: one speaker, the name in the text."""
    return [line("user", f"{'레티아' if s == 'heroine' else '민준'}: {c}") for s, c in SESSION]


def test_a_transcript_with_alternating_name_prefixes_is_a_dialogue() -> None:
    """One speaker field, names written into the lines: a dialogue; labelled notes and one name are not."""
    assert name_prefix("Caroline: I went to the lake") == "caroline"
    assert name_prefix("민수\uff1a 응 지난주에") == "민수"
    assert name_prefix("Mr Kim: hello") == "mr kim"
    assert name_prefix("응, 지난 화요일에!") is None
    assert dialogue_batch(transcript(), N)
    assert turn_flags(transcript(), N) == [True] * N
    # Without the names the same lines by one speaker are not a dialogue (as before).
    assert not dialogue_batch([line("user", c) for _, c in SESSION], N)
    one_name = [line("user", f"민준: {c}") for _, c in SESSION]
    assert not dialogue_batch(one_name, N)
    labels = [line("user", f"{k}: {v}") for k, v in [("직업", "간호사"), ("취미", "뜨개질"), ("고향", "숲속 마을"),
                                                     ("간식", "마카롱"), ("음료", "녹차"), ("동네", "인천"),
                                                     ("폰", "아이폰"), ("반려", "고양이")]]
    assert not dialogue_batch(labels, N)


def test_a_lone_line_joins_when_another_voice_said_the_latest_row_within_the_window() -> None:
    """Speaker field or name prefix; not after the window, not the same voice, not without a previous row.

    Without names only a line said at the previous row's moment joins it (a session stored at its date): lines
    said a minute apart by turns are how a game stores tidy facts one by one.
    """
    reply = line("user", "응, 지난 화요일에!", DAY)
    asked = StoredTurn("경주 다녀왔다며? 언제 갔었어?", DAY, Speaker.HEROINE)
    assert joins_dialogue(reply, asked, DAY, WINDOW)
    assert not joins_dialogue(replace(reply, valid_at=DAY + timedelta(minutes=1)), asked, DAY, WINDOW)
    assert not joins_dialogue(reply, None, DAY, WINDOW)
    assert not joins_dialogue(reply, replace(asked, speaker=Speaker.USER), DAY, WINDOW)
    assert not joins_dialogue(reply, replace(asked, valid_at=DAY - WINDOW), DAY, WINDOW)
    named = line("user", "민준: 응, 지난 화요일에!", DAY + timedelta(minutes=1))
    assert joins_dialogue(named, StoredTurn("레티아: 언제 갔었어?", DAY, Speaker.USER), DAY, WINDOW)
    assert not joins_dialogue(named, StoredTurn("민준: 경주 갔었어", DAY, Speaker.HEROINE), DAY, WINDOW)


def test_a_lone_line_said_now_without_a_name_skips_the_previous_row_read() -> None:
    """Only a dated or named lone line can join a stored row, so only then is the scope's latest row read."""
    assert may_join([line("user", "응, 지난 화요일에!")], [False], N)
    assert may_join([line("user", "민준: 응, 지난 화요일에!", None)], [False], N)
    assert not may_join([line("user", "응, 지난 화요일에!", None)], [False], N)
    assert not may_join([line("user", "응, 지난 화요일에!")], [False], 0)


def test_context_when_asked_keeps_a_statement_alone_and_a_reply_with_its_question() -> None:
    """``asked``: only a reply to a question takes the previous line; ``asked-or-short`` also a short line."""
    facts = [line("user", "오늘 퇴근길에 비 맞았어", DAY),
             line("heroine", "난 마을 도서관에서 책 정리하는 일을 해", DAY),
             line("heroine", "경주 다녀왔다며? 언제 갔었어?", DAY), line("user", "응, 지난 화요일에!", DAY),
             line("heroine", "좋았겠다", DAY)]
    flags = [True] * len(facts)
    always = embedding_texts(facts, flags, DAY, WINDOW, None)
    asked = embedding_texts(facts, flags, DAY, WINDOW, None, when="asked")
    short = embedding_texts(facts, flags, DAY, WINDOW, None, when="asked-or-short")
    assert always[1] == "오늘 퇴근길에 비 맞았어\n난 마을 도서관에서 책 정리하는 일을 해"
    assert asked[1] == short[1] == "난 마을 도서관에서 책 정리하는 일을 해"
    assert asked[3] == short[3] == always[3] == "경주 다녀왔다며? 언제 갔었어?\n응, 지난 화요일에!"
    assert asked[4] == "좋았겠다"
    assert short[4] == always[4] == "응, 지난 화요일에!\n좋았겠다"
    assert takes_previous("아무 말", "가" * SHORT_TURN_CHARS, "asked-or-short")
    assert not takes_previous("아무 말", "가" * (SHORT_TURN_CHARS + 1), "asked-or-short")


async def test_one_line_per_request_without_a_tier_gets_the_turns_treatment(
    engine: MemoryEngine, scope: Scope, database_url: str,
) -> None:
    """Every line of a session at the session's date, one request each: the reply is a turn.

    It is embedded with its question, and the same reply a week later (after another question) is kept; with
    dialogue_batch_min 0 the reply is embedded alone and the repeat merged into the first.
    """
    question, reply = SESSION[0][1], SESSION[1][1]
    await engine.store(scope, [line("heroine", question)])
    (first,) = await engine.store(scope, [line("user", reply)])
    await engine.store(scope, [line("heroine", "설악산 다녀왔다며? 언제야?", DAY + timedelta(days=7))])
    (again,) = await engine.store(scope, [line("user", reply, DAY + timedelta(days=7))])
    assert (first.outcome, again.outcome) == (StoreOutcome.CREATED, StoreOutcome.CREATED)
    first_ctx, second_ctx, alone = await engine.embedder.embed_passages(
        [f"Letia: {question}\n나: {reply}", f"Letia: 설악산 다녀왔다며? 언제야?\n나: {reply}", reply])
    stored = await stored_vector(database_url, scope, reply)  # either copy: each has its own question
    assert max(float(np.dot(stored, first_ctx)), float(np.dot(stored, second_ctx))) > 0.999
    assert float(np.dot(stored, alone)) < 0.999
    off = replace(engine, write_settings=replace(engine.write_settings, dialogue_batch_min=0))
    other = Scope(scope.user_id + "-off", scope.heroine_id)
    await off.store(other, [line("heroine", question)])
    (off_first,) = await off.store(other, [line("user", reply)])
    await off.store(other, [line("heroine", "설악산 다녀왔다며? 언제야?", DAY + timedelta(days=7))])
    (off_again,) = await off.store(other, [line("user", reply, DAY + timedelta(days=7))])
    assert (off_again.outcome, off_again.memory_id) == (StoreOutcome.DUPLICATE, off_first.memory_id)
    assert float(np.dot(await stored_vector(database_url, other, reply), alone)) > 0.999


async def test_tidy_facts_stored_by_turns_one_per_request_keep_the_duplicate_rule(
    engine: MemoryEngine, scope: Scope,
) -> None:
    """The heroine's fact, then the player's, each at its own moment: facts, so a restated one is a duplicate."""
    await engine.store(scope, [line("heroine", "레티아는 도서관에서 일함", DAY)])
    (first,) = await engine.store(scope, [line("user", "커피를 좋아함", DAY + timedelta(minutes=1))])
    await engine.store(scope, [line("heroine", "레티아는 비 오는 날을 싫어함", DAY + timedelta(minutes=2))])
    (again,) = await engine.store(scope, [line("user", "커피를 좋아함", DAY + timedelta(minutes=3))])
    assert (again.outcome, again.memory_id) == (StoreOutcome.DUPLICATE, first.memory_id)


async def test_a_tidy_fact_after_the_same_speaker_stays_a_fact(engine: MemoryEngine, scope: Scope) -> None:
    """Notes stored one per request by one speaker on one day: not turns (the knowledge duplicate rule holds)."""
    await engine.store(scope, [line("user", "고양이를 키움")])
    await engine.store(scope, [line("user", "커피를 좋아함")])
    (again,) = await engine.store(scope, [line("user", "커피를 좋아함", DAY + timedelta(minutes=5))])
    assert again.outcome is StoreOutcome.DUPLICATE


def test_dialogue_context_when_and_speaker_label_are_configurable() -> None:
    """Defaults ``always`` and ``name``; the other values accepted; anything else refused with the name."""
    flags = vars(build_parser().parse_args(["serve"]))
    assert load_config(flags, {}).write.dialogue_context_when == WriteConfig.dialogue_context_when == "always"
    env = {"NPC_MEMORY_DIALOGUE_CONTEXT_WHEN": "asked"}
    assert load_config(flags, env).write.dialogue_context_when == "asked"
    with pytest.raises(ConfigError, match="DIALOGUE_CONTEXT_WHEN"):
        load_config(flags, {"NPC_MEMORY_DIALOGUE_CONTEXT_WHEN": "sometimes"})
    assert load_config(flags, {}).write.dialogue_speaker_label == WriteConfig.dialogue_speaker_label == "name"
    assert load_config(flags, {"NPC_MEMORY_DIALOGUE_SPEAKER_LABEL": "off"}).write.dialogue_speaker_label == "off"
    with pytest.raises(ConfigError, match="DIALOGUE_SPEAKER_LABEL"):
        load_config(flags, {"NPC_MEMORY_DIALOGUE_SPEAKER_LABEL": "full"})


def test_a_speaker_label_writes_who_said_each_line_into_the_embedded_text() -> None:
    """``role``: 나/너 for Korean lines, Me/You for others; ``name``: her lines under the heroine's id; off: none."""
    facts = [line("heroine", "경주 다녀왔다며? 언제 갔었어?", DAY), line("user", "Yes, last Tuesday!", DAY),
             line("user", "민준: 응", DAY)]
    flags = [True] * 3
    role = embedding_texts(facts, flags, DAY, WINDOW, None, with_answer=True, label="role", heroine="letia")
    assert role[0] == role[1] == "너: 경주 다녀왔다며? 언제 갔었어?\nMe: Yes, last Tuesday!"
    assert role[2] == "Me: Yes, last Tuesday!\n민준: 응"
    name = embedding_texts(facts, flags, DAY, WINDOW, None, label="name", heroine="letia")
    assert name[1] == "Letia: 경주 다녀왔다며? 언제 갔었어?\nMe: Yes, last Tuesday!"
    stored = StoredTurn("뭐 해?", DAY, Speaker.HEROINE)
    alone = embedding_texts([facts[1]], [True], DAY, WINDOW, stored, label="role")
    assert alone == ["너: 뭐 해?\nMe: Yes, last Tuesday!"]
    assert embedding_texts(facts, flags, DAY, WINDOW, None)[1] == "경주 다녀왔다며? 언제 갔었어?\nYes, last Tuesday!"
    assert embedding_texts(facts, [False] * 3, DAY, WINDOW, None, label="role") == [f.content for f in facts]


async def test_reembed_gives_a_knowledge_dialogue_the_write_paths_vectors(
    engine: MemoryEngine, scope: Scope, database_url: str,
) -> None:
    """A dialogue request stored as knowledge (turns a minute apart, labels, answers): a re-embed keeps each vector.

    Before, such rows were re-embedded alone (only tier source rows took context, none their answer).
    """
    labelled = replace(engine, write_settings=replace(engine.write_settings, dialogue_speaker_label="role"))
    one_moment = Scope(scope.user_id + "-moment", scope.heroine_id)  # every turn at the session's date
    await labelled.store(scope, [line(s, c, DAY + timedelta(minutes=i)) for i, (s, c) in enumerate(SESSION)])
    await labelled.store(one_moment, [line(s, c, DAY) for s, c in SESSION])
    before = {(sc, c): await stored_vector(database_url, sc, c) for sc in (scope, one_moment) for _, c in SESSION}
    shape = TurnContext(with_answer=True, label="role")
    await reembed_all(engine.db, engine.embedder, 64, lambda _: None, WINDOW, shape)
    for (sc, c), vector in before.items():
        assert float(np.dot(await stored_vector(database_url, sc, c), vector)) > 0.999, c
