"""ExtractMemories over gRPC against a scripted chat-completions endpoint.

The endpoint (tests/chat_endpoint.py) is a real HTTP server in the test process answering from a script,
because no language model can run here.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime

import grpc
import pytest
from chat_endpoint import ChatEndpoint, Step, facts_answer
from google.protobuf import timestamp_pb2
from google.rpc import error_details_pb2
from grpc_status import rpc_status
from npc_memory.config import Config
from npc_memory.domain.model import Scope
from npc_memory.engine import MemoryEngine
from npc_memory.server import create_server
from npc_memory_client.v1 import extraction_pb2 as ex
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc

# The extraction example: four lines, four facts (speaker, subject, subject_id as the game's design table).
SEED_TURNS = [
    (pb.SPEAKER_USER, "나는 고양이 좋아해"),
    (pb.SPEAKER_HEROINE, "저도 고양이 좋아해요"),
    (pb.SPEAKER_HEROINE, "오빠는 따뜻한 사람이에요"),
    (pb.SPEAKER_USER, "이 마을은 평화롭네"),
]
SEED_FACTS = [
    {"speaker": "user", "subject": "user", "subject_id": "user", "content_type": "preference",
     "content": "고양이를 좋아함", "importance": 6, "slot": "favorite_animal"},
    {"speaker": "heroine", "subject": "heroine", "subject_id": "letia", "content_type": "preference",
     "content": "고양이를 좋아함", "importance": 5, "slot": "favorite_animal"},
    {"speaker": "heroine", "subject": "user", "subject_id": "user", "content_type": "opinion",
     "content": "따뜻한 사람임", "importance": 7, "slot": ""},
    {"speaker": "user", "subject": "world", "subject_id": "world", "content_type": "fact",
     "content": "마을이 평화로움", "importance": 3, "slot": ""},
]
DOG_FACT = {"speaker": "user", "subject": "user", "subject_id": "user", "content_type": "preference",
            "content": "강아지를 좋아함", "importance": 7, "slot": "favorite_animal"}


def _ts(day: int) -> timestamp_pb2.Timestamp:
    ts = timestamp_pb2.Timestamp()
    ts.FromDatetime(datetime(2026, 3, day, 12, tzinfo=UTC))
    return ts


def _request(scope: Scope, dialogue_id: str, turns: Sequence[tuple[pb.Speaker.ValueType, str]], day: int = 1,
             mode: int = ex.EXTRACTION_MODE_SYNC) -> ex.ExtractMemoriesRequest:
    return ex.ExtractMemoriesRequest(
        scope=pb.Scope(user_id=scope.user_id, heroine_id=scope.heroine_id),
        dialogue=ex.Dialogue(dialogue_id=dialogue_id, turns=[
            ex.DialogueTurn(speaker=s, text=t, game_time=_ts(day)) for s, t in turns
        ]),
        mode=mode,  # type: ignore[arg-type]
    )


async def _wait_finished(stub: svc_grpc.MemoryServiceAsyncStub, user_id: str, job_id: str) -> ex.ExtractionJob:
    async with asyncio.timeout(20):
        while True:
            job = (await stub.GetExtractionJob(ex.GetExtractionJobRequest(user_id=user_id, job_id=job_id))).job
            if job.state in (ex.EXTRACTION_JOB_STATE_DONE, ex.EXTRACTION_JOB_STATE_FAILED):
                return job
            await asyncio.sleep(0.05)


async def _valid(stub: svc_grpc.MemoryServiceAsyncStub, scope: Scope) -> list[pb.Memory]:
    page = await stub.ListMemories(svc.ListMemoriesRequest(scope=pb.Scope(user_id=scope.user_id,
                                                                          heroine_id=scope.heroine_id)))
    return list(page.memories)


async def test_seed_dialogue_becomes_its_four_facts(
    ex_stub: svc_grpc.MemoryServiceAsyncStub, chat: ChatEndpoint, scope: Scope
) -> None:
    """The example dialogue becomes the four facts with the speaker, subject and subject_id of the table."""
    chat.play(facts_answer(*SEED_FACTS))
    job = (await ex_stub.ExtractMemories(_request(scope, "d1", SEED_TURNS))).job
    assert job.state == ex.EXTRACTION_JOB_STATE_DONE
    assert job.attempts == 1
    assert not job.rejected
    assert [m.result.outcome for m in job.memories] == [pb.STORE_OUTCOME_CREATED] * 4
    stored = {(m.speaker, m.subject, m.subject_id, m.content) for m in await _valid(ex_stub, scope)}
    assert stored == {
        (pb.SPEAKER_USER, pb.SUBJECT_USER, "user", "고양이를 좋아함"),
        (pb.SPEAKER_HEROINE, pb.SUBJECT_HEROINE, "letia", "고양이를 좋아함"),
        (pb.SPEAKER_HEROINE, pb.SUBJECT_USER, "user", "따뜻한 사람임"),
        (pb.SPEAKER_USER, pb.SUBJECT_WORLD, "world", "마을이 평화로움"),
    }
    sent = chat.requests[0]
    assert sent["response_format"]["type"] == "json_schema"
    prompt = sent["messages"][0]["content"]
    assert "장기 기억" in prompt
    assert "나는 고양이 좋아해" in prompt


async def test_later_dialogue_preferring_dogs_supersedes_the_cat(
    ex_stub: svc_grpc.MemoryServiceAsyncStub, chat: ChatEndpoint, scope: Scope
) -> None:
    """A dialogue on a later game day whose fact fills the same slot closes the earlier preference."""
    chat.play(facts_answer(*SEED_FACTS))
    first = (await ex_stub.ExtractMemories(_request(scope, "day1", SEED_TURNS, day=1))).job
    cat_id = first.memories[0].result.memory_id
    chat.play(facts_answer(DOG_FACT))
    later = (await ex_stub.ExtractMemories(
        _request(scope, "day30", [(pb.SPEAKER_USER, "요즘은 강아지가 더 좋아")], day=30))).job
    (dog,) = later.memories
    assert dog.result.outcome == pb.STORE_OUTCOME_SUPERSEDED
    assert list(dog.result.superseded_ids) == [cat_id]
    user_prefs = [m.content for m in await _valid(ex_stub, scope) if m.slot == "favorite_animal"
                  and m.subject == pb.SUBJECT_USER]
    assert user_prefs == ["강아지를 좋아함"]


async def test_same_dialogue_id_is_one_job_and_one_write(
    ex_stub: svc_grpc.MemoryServiceAsyncStub, chat: ChatEndpoint, scope: Scope
) -> None:
    """Sending a dialogue id again returns the first job without calling the model or writing again."""
    chat.play(facts_answer(*SEED_FACTS))
    first = (await ex_stub.ExtractMemories(_request(scope, "again", SEED_TURNS))).job
    second = (await ex_stub.ExtractMemories(_request(scope, "again", SEED_TURNS))).job
    assert second.job_id == first.job_id
    assert second.state == ex.EXTRACTION_JOB_STATE_DONE
    assert len(chat.requests) == 1
    assert len(await _valid(ex_stub, scope)) == 4


async def test_bad_facts_are_rejected_one_by_one_and_the_good_one_stored(
    ex_stub: svc_grpc.MemoryServiceAsyncStub, chat: ChatEndpoint, scope: Scope
) -> None:
    """Importance 42, a wrong enum, a missing field and an unknown heroine are each rejected with a reason."""
    good = SEED_FACTS[0]
    chat.play(facts_answer(
        good | {"importance": 42},
        good | {"content_type": "gossip"},
        {k: v for k, v in good.items() if k != "speaker"},
        SEED_FACTS[1] | {"subject_id": "mina"},
        SEED_FACTS[3],
    ))
    job = (await ex_stub.ExtractMemories(_request(scope, "bad", SEED_TURNS))).job
    assert job.state == ex.EXTRACTION_JOB_STATE_DONE
    reasons = {r.fact_index: " ".join(r.reasons) for r in job.rejected}
    assert set(reasons) == {0, 1, 2, 3}
    assert "importance" in reasons[0]
    assert "content_type" in reasons[1]
    assert "speaker: is required" in reasons[2]
    assert "mina" in reasons[3]
    assert json.loads(job.rejected[0].raw)["importance"] == 42
    assert [m.fact_index for m in job.memories] == [4]
    assert [m.content for m in await _valid(ex_stub, scope)] == ["마을이 평화로움"]


async def test_flapping_endpoint_is_retried_until_the_job_is_done(
    ex_stub: svc_grpc.MemoryServiceAsyncStub, chat: ChatEndpoint, scope: Scope
) -> None:
    """An asynchronous job meets a 500, then a timeout, then an answer: done on the third attempt, written once."""
    chat.play(Step(status=500, content="overloaded"), Step(delay=1.5, content="late"), facts_answer(*SEED_FACTS))
    queued = (await ex_stub.ExtractMemories(_request(scope, "flap", SEED_TURNS, mode=ex.EXTRACTION_MODE_ASYNC))).job
    assert queued.state == ex.EXTRACTION_JOB_STATE_PENDING
    job = await _wait_finished(ex_stub, scope.user_id, queued.job_id)
    assert job.state == ex.EXTRACTION_JOB_STATE_DONE
    assert job.attempts == 3
    assert job.last_error == ""
    assert len(await _valid(ex_stub, scope)) == 4


async def test_malformed_answers_fail_the_job_after_its_attempts_and_store_nothing(
    ex_stub: svc_grpc.MemoryServiceAsyncStub, chat: ChatEndpoint, scope: Scope
) -> None:
    """An answer that is not JSON fails the attempt; after the last attempt the job is failed, nothing stored."""
    chat.play(Step(content='{"facts": [{"speaker": "user", '))
    queued = (await ex_stub.ExtractMemories(_request(scope, "junk", SEED_TURNS, mode=ex.EXTRACTION_MODE_ASYNC))).job
    job = await _wait_finished(ex_stub, scope.user_id, queued.job_id)
    assert job.state == ex.EXTRACTION_JOB_STATE_FAILED
    assert job.attempts == 3
    assert "not JSON" in job.last_error
    assert await _valid(ex_stub, scope) == []


async def test_bad_request_names_the_fields(ex_stub: svc_grpc.MemoryServiceAsyncStub, scope: Scope) -> None:
    """A dialogue without an id, with an empty turn of no speaker, is INVALID_ARGUMENT naming each field."""
    request = _request(scope, "", [(pb.SPEAKER_UNSPECIFIED, "")])
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await ex_stub.ExtractMemories(request)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    status = rpc_status.from_call(caught.value)
    assert status is not None
    bad = error_details_pb2.BadRequest()
    assert status.details[0].Unpack(bad)
    assert {v.field for v in bad.field_violations} == {
        "dialogue.dialogue_id", "dialogue.turns[0].speaker", "dialogue.turns[0].text"}


async def test_jobs_of_another_player_are_not_found(
    ex_stub: svc_grpc.MemoryServiceAsyncStub, chat: ChatEndpoint, scope: Scope
) -> None:
    """GetExtractionJob with another player's id answers NOT_FOUND: a job never crosses players."""
    chat.play(facts_answer(SEED_FACTS[3]))
    job = (await ex_stub.ExtractMemories(_request(scope, "mine", SEED_TURNS))).job
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await ex_stub.GetExtractionJob(ex.GetExtractionJobRequest(user_id="someone-else", job_id=job.job_id))
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND


async def test_without_an_endpoint_extraction_is_refused(engine: MemoryEngine, config: Config, scope: Scope) -> None:
    """A server with no extraction_url answers FAILED_PRECONDITION and queues nothing."""
    assert not replace(config).extraction.enabled
    server, port, _health = await create_server(engine, "127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await svc_grpc.MemoryServiceStub(channel).ExtractMemories(_request(scope, "x", SEED_TURNS))
        assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    finally:
        await server.stop(0)
