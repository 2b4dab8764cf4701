"""A question stored alone (one request per turn) takes a vector over its answer when the answer arrives."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
from npc_memory.domain.dialogue import StoredTurn, TurnContext, answered_text
from npc_memory.domain.model import Scope, Speaker
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
