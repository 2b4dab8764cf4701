"""One turn per request: a question takes a vector over its answer when it comes; a second line in a row is a turn."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import psycopg
from npc_memory.domain.dialogue import StoredTurn, TurnContext, answered_text, joins_dialogue
from npc_memory.domain.model import Scope, Speaker, StoreOutcome
from npc_memory.engine import MemoryEngine
from test_dialogue_batch import line
from test_dialogue_turns import stored_vector

DAY = datetime(2024, 8, 3, tzinfo=UTC)
WINDOW = timedelta(minutes=30)
SHAPE = TurnContext(with_answer=True, label="name")
QUESTION = "운전면허는 있어?"
ANSWER = "응, 지난달에 세 번 떨어지고 겨우 붙었어!"


def asked(content: str = QUESTION, at: datetime = DAY) -> StoredTurn:
    """The scope's latest row as the store reads it: a heroine's line after the player's greeting."""
    return StoredTurn(content, at, Speaker.HEROINE, uuid.uuid4(), ("안녕!", Speaker.USER))


def test_the_answer_to_a_stored_question_gives_it_the_dialogue_requests_text() -> None:
    """Predecessor, question and answer, each with its speaker, as a dialogue request embeds a question."""
    reply = [line("user", ANSWER, DAY + timedelta(minutes=1))]
    assert answered_text(asked(), reply, [True], DAY, WINDOW, SHAPE, "letia") == (
        f"나: 안녕!\nLetia: {QUESTION}\n나: {ANSWER}")
    # Not a question, not a turn, said after the window, answers off, or the caller gave the answer's vector.
    assert answered_text(asked("나도 면허 땄어"), reply, [True], DAY, WINDOW, SHAPE, "letia") is None
    assert answered_text(asked(), reply, [False], DAY, WINDOW, SHAPE, "letia") is None
    late = [line("user", ANSWER, DAY + timedelta(minutes=31))]
    assert answered_text(asked(), late, [True], DAY, WINDOW, SHAPE, "letia") is None
    assert answered_text(asked(), reply, [True], DAY, WINDOW, replace(SHAPE, with_answer=False), "letia") is None
    given = [replace(reply[0], embedding=np.ones(384, dtype=np.float32) / np.sqrt(384))]
    assert answered_text(asked(), given, [True], DAY, WINDOW, SHAPE, "letia") is None
    assert answered_text(None, reply, [True], DAY, WINDOW, SHAPE, "letia") is None


async def test_one_turn_per_request_a_question_is_embedded_again_with_its_answer(
    engine: MemoryEngine, scope: Scope, database_url: str,
) -> None:
    """A session stored line by line at its date: the question's vector is over greeting, question and answer.

    Before, it kept the vector over greeting and question only (it was the latest row when stored); with
    ``dialogue_context_answer`` off it still does.
    """
    for speaker, content in (("user", "안녕!"), ("heroine", QUESTION), ("user", ANSWER)):
        await engine.store(scope, [line(speaker, content)])
    answered, unanswered = await engine.embedder.embed_passages(
        [f"나: 안녕!\nLetia: {QUESTION}\n나: {ANSWER}", f"나: 안녕!\nLetia: {QUESTION}"])
    assert float(np.dot(await stored_vector(database_url, scope, QUESTION), answered)) > 0.999
    off = replace(engine, write_settings=replace(engine.write_settings, dialogue_context_answer=False))
    other = Scope(scope.user_id + "-off", scope.heroine_id)
    for speaker, content in (("user", "안녕!"), ("heroine", QUESTION), ("user", ANSWER)):
        await off.store(other, [line(speaker, content)])
    assert float(np.dot(await stored_vector(database_url, other, QUESTION), unanswered)) > 0.999


def test_the_same_voice_again_joins_only_a_moment_another_voice_spoke_at() -> None:
    """The heroine's second line in a row of a session stored at its date; not notes of one speaker or moment."""
    second = line("heroine", "다음엔 나도 데려가", DAY)
    said = StoredTurn("ㅋㅋ 좋았겠다", DAY, Speaker.HEROINE, uuid.uuid4(), moment_voices=True)
    assert joins_dialogue(second, said, DAY, WINDOW)
    assert not joins_dialogue(second, replace(said, moment_voices=False), DAY, WINDOW)
    assert not joins_dialogue(replace(second, valid_at=DAY + timedelta(minutes=1)), said, DAY, WINDOW)
    assert not joins_dialogue(second, said, DAY, WINDOW, same_voice=False)


async def test_one_turn_per_request_a_second_line_of_the_same_speaker_is_a_turn(
    engine: MemoryEngine, scope: Scope, database_url: str,
) -> None:
    """A session stored line by line at its date, the heroine saying two lines in a row.

    Her second line is a turn: embedded over her first, and kept when she said it on an earlier day too (it
    was a knowledge fact before: embedded alone and merged into the earlier line as a duplicate).
    """
    week = DAY - timedelta(days=7)
    for speaker, content, at in (("user", "안녕!", week), ("heroine", "경주 언제 갔었어?", week),
                                 ("user", "응, 월요일에", DAY), ("heroine", "좋았겠다", DAY),
                                 ("heroine", "경주 언제 갔었어?", DAY)):
        (result,) = await engine.store(scope, [line(speaker, content, at)])
    assert result.outcome is StoreOutcome.CREATED
    (expected,) = await engine.embedder.embed_passages(["Letia: 좋았겠다\nLetia: 경주 언제 갔었어?"])
    async with await psycopg.AsyncConnection.connect(database_url) as conn:
        cur = await conn.execute("SELECT embedding::text FROM user_memories WHERE user_id = %s AND id = %s",
                                 (scope.user_id, result.memory_id))
        row = await cur.fetchone()
    assert row is not None
    stored = np.array([float(x) for x in row[0].strip("[]").split(",")], dtype=np.float32)
    assert float(np.dot(stored, expected)) > 0.999


async def test_a_sessions_first_line_that_repeats_a_dialogue_line_is_a_turn(engine: MemoryEngine, scope: Scope) -> None:
    """Two sessions stored line by line at their dates, both opened with the same greeting.

    The second greeting is kept (a turn; it was merged into the first as a restated fact before, and then the
    reply found no row at its moment); with ``dialogue_repeated_lines`` off it is merged, and a fact restated
    by one speaker outside any dialogue stays a duplicate.
    """
    week = DAY - timedelta(days=7)
    for speaker, content in (("user", "안녕! 왔어"), ("heroine", "어서 와")):
        await engine.store(scope, [line(speaker, content, week)])
    (again,) = await engine.store(scope, [line("user", "안녕! 왔어", DAY)])
    assert again.outcome is StoreOutcome.CREATED
    off = replace(engine, write_settings=replace(engine.write_settings, dialogue_repeated_lines=False))
    other = Scope(scope.user_id + "-off", scope.heroine_id)
    for speaker, content in (("user", "안녕! 왔어"), ("heroine", "어서 와")):
        await off.store(other, [line(speaker, content, week)])
    (merged,) = await off.store(other, [line("user", "안녕! 왔어", DAY)])
    assert merged.outcome is StoreOutcome.DUPLICATE
    notes = Scope(scope.user_id + "-notes", scope.heroine_id)
    await engine.store(notes, [line("user", "커피를 좋아함", week)])
    (restated,) = await engine.store(notes, [line("user", "커피를 좋아함", DAY)])
    assert restated.outcome is StoreOutcome.DUPLICATE
