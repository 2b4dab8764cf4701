"""StoreDialogue through a live gRPC server: turns as linked sources with context vectors, and the rest.

Resends, streaming, validation, isolation, extraction with DERIVED_FROM links (the chat model is
tests/chat_endpoint.py's script).
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any, TypeAlias

import grpc
import numpy as np
import pytest
from bad_request import violations
from chat_endpoint import ChatEndpoint, facts_answer
from google.protobuf import timestamp_pb2
from npc_memory.domain.dialogue import Line, turn_text, turn_vector, turn_views
from npc_memory.domain.model import Scope, Speaker
from npc_memory.engine import MemoryEngine
from npc_memory_client.v1 import extraction_pb2 as ex_pb
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc

Stub: TypeAlias = "svc_grpc.MemoryServiceAsyncStub"
SAID = datetime(2026, 5, 1, 20, 0, tzinfo=UTC)
TALK = [  # (speaker, text, shown name)
    (Speaker.HEROINE, "경주 다녀왔다며? 언제 갔었어?", "레티아"),
    (Speaker.USER, "응, 지난 화요일에!", "민수"),
    (Speaker.HEROINE, "불국사 앞에서 사진 많이 찍었어?", "레티아"),
    (Speaker.USER, "엄청 찍었지 ㅋㅋ", "민수"),
    (Speaker.HEROINE, "ㅋㅋ 그러게", "레티아"),
]
SPEAKERS = {Speaker.USER: pb.SPEAKER_USER, Speaker.HEROINE: pb.SPEAKER_HEROINE}


def _ts(when: datetime) -> timestamp_pb2.Timestamp:
    ts = timestamp_pb2.Timestamp()
    ts.FromDatetime(when)
    return ts


def _turns(talk: list[tuple[Speaker, str, str]], start: int = 0) -> list[ex_pb.DialogueTurn]:
    return [ex_pb.DialogueTurn(speaker=SPEAKERS[s], text=t, speaker_name=n,
                               said_at=_ts(SAID + timedelta(minutes=start + i)))
            for i, (s, t, n) in enumerate(talk)]


def _request(scope: Scope, dialogue_id: str, turns: list[ex_pb.DialogueTurn], first: int = 0,
             extract: bool = False) -> svc.StoreDialogueRequest:
    return svc.StoreDialogueRequest(
        scope=pb.Scope(user_id=scope.user_id, heroine_id=scope.heroine_id),
        dialogue=ex_pb.Dialogue(dialogue_id=dialogue_id, turns=turns), first_position=first, extract=extract)


def _ends(links: Any, me: str) -> set[str]:
    """The other end of each link."""
    return {link.to_memory_id if link.from_memory_id == me else link.from_memory_id for link in links}


async def _views_vector(engine: MemoryEngine, views: tuple[str, ...]) -> np.ndarray[Any, Any]:
    """A turn's vector as the write path makes it: the mean of its views' vectors."""
    return turn_vector(await engine.embedder.embed_passages(list(views)))


def _cosine(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


async def _vectors(engine: MemoryEngine, ids: list[str]) -> list[np.ndarray[Any, Any]]:
    async with engine.db.connection() as conn:
        cur = await conn.execute("SELECT id, embedding FROM user_memories WHERE id = ANY(%(ids)s)",
                                 {"ids": [uuid.UUID(i) for i in ids]})
        got = {str(r["id"]): np.asarray(r["embedding"].to_numpy(), dtype=np.float32) for r in await cur.fetchall()}
    return [got[i] for i in ids]


async def _count(engine: MemoryEngine, scope: Scope) -> int:
    async with engine.db.connection() as conn:
        cur = await conn.execute("SELECT count(*) AS n FROM user_memories WHERE user_id = %(u)s AND heroine_id = %(h)s",
                                 {"u": scope.user_id, "h": scope.heroine_id})
        row = await cur.fetchone()
    assert row is not None
    return int(row["n"])


async def test_turns_are_linked_sources_at_their_place_embedded_with_their_context(
    stub: Stub, engine: MemoryEngine, scope: Scope
) -> None:
    """Each turn: tier source, its dialogue and position, its line as content, a vector over its context."""
    resp = await stub.StoreDialogue(_request(scope, "gyeongju", _turns(TALK)))
    ids = [r.memory_id for r in resp.turns]
    assert [r.outcome for r in resp.turns] == [pb.STORE_OUTCOME_CREATED] * len(TALK)
    assert not resp.HasField("job")
    for position, (memory_id, (speaker, text, name)) in enumerate(zip(ids, TALK, strict=True)):
        m = (await stub.GetMemory(svc.GetMemoryRequest(scope=_request(scope, "", []).scope,
                                                       memory_id=memory_id))).memory
        assert (m.tier, m.content, m.speaker, m.dialogue_id, m.dialogue_position, m.speaker_name) == (
            pb.TIER_SOURCE, text, SPEAKERS[speaker], "gyeongju", position, name)
        assert m.valid_at.ToDatetime(tzinfo=UTC) == SAID + timedelta(minutes=position)
    # Consecutive turns are linked: the second turn's related link names the first, so hops walk the talk.
    links = await stub.ListLinks(svc.ListLinksRequest(scope=_request(scope, "", []).scope, memory_id=ids[1]))
    assert _ends(links.related, ids[1]) == {ids[0], ids[2]}
    lines = [Line(s, t, n) for s, t, n in TALK]
    expected = [await _views_vector(engine, turn_views(
        line, lines[i - 1] if i else None, lines[i + 1] if i + 1 < len(lines) else None, "letia"))
        for i, line in enumerate(lines)]
    for got, want in zip(await _vectors(engine, ids), expected, strict=True):
        assert _cosine(got, want) > 0.999
        assert abs(float(np.linalg.norm(got)) - float(np.linalg.norm(want))) < 1e-3  # the mean, not renormalised
    # The question's text holds its answer; the answer's holds its question; the line stays the line.
    question = turn_text(lines[0], None, lines[1], "letia")
    assert question == "레티아: 경주 다녀왔다며? 언제 갔었어?\n민수: 응, 지난 화요일에!"


async def test_a_resend_is_the_stored_turn_and_another_line_there_is_refused(
    stub: Stub, engine: MemoryEngine, scope: Scope
) -> None:
    """The same (scope, dialogue, position) again writes nothing; a different line at a stored place is refused."""
    first = await stub.StoreDialogue(_request(scope, "d", _turns(TALK[:3])))
    count = await _count(engine, scope)
    again = await stub.StoreDialogue(_request(scope, "d", _turns(TALK[:3])))
    assert [r.memory_id for r in again.turns] == [r.memory_id for r in first.turns]
    assert [r.outcome for r in again.turns] == [pb.STORE_OUTCOME_DUPLICATE] * 3
    # Overlapping: positions 1-2 resent, 3-4 new.
    more = await stub.StoreDialogue(_request(scope, "d", _turns(TALK[1:]), first=1))
    assert [r.memory_id for r in more.turns[:2]] == [r.memory_id for r in first.turns[1:]]
    assert [r.outcome for r in more.turns[2:]] == [pb.STORE_OUTCOME_CREATED] * 2
    assert await _count(engine, scope) == count + 2
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.StoreDialogue(_request(scope, "d", _turns([(Speaker.USER, "전혀 다른 말", "민수")]), first=2))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "dialogue.turns[0].text" in violations(err.value)
    assert await _count(engine, scope) == count + 2


async def test_a_dialogue_streamed_line_by_line_ends_with_the_vectors_of_one_request(
    stub: Stub, engine: MemoryEngine, scope: Scope
) -> None:
    """Sent one turn per request (first_position counting up), the turns get the vectors and links of one request.

    A question stored alone takes its answer's context when the answer arrives.
    """
    whole = await stub.StoreDialogue(_request(scope, "once", _turns(TALK)))
    streamed = [(await stub.StoreDialogue(_request(scope, "streamed", _turns([turn], start=i), first=i))).turns[0]
                for i, turn in enumerate(TALK)]
    for a, b in zip(await _vectors(engine, [r.memory_id for r in whole.turns]),
                    await _vectors(engine, [r.memory_id for r in streamed]), strict=True):
        assert _cosine(a, b) > 0.9999
    links = await stub.ListLinks(svc.ListLinksRequest(scope=_request(scope, "", []).scope,
                                                      memory_id=streamed[2].memory_id))
    assert _ends(links.related, streamed[2].memory_id) == {streamed[1].memory_id, streamed[3].memory_id}


async def test_a_line_said_in_many_dialogues_is_one_event_each_and_shown_once(
    stub: Stub, engine: MemoryEngine, scope: Scope
) -> None:
    """The same line in three dialogues is three memories; a search shows it once."""
    line = (Speaker.USER, "ㅋㅋ 그러게 나도 그렇게 생각해", "민수")
    ids = set()
    for n in range(3):
        resp = await stub.StoreDialogue(_request(scope, f"day-{n}", _turns([TALK[0], line])))
        ids.add(resp.turns[1].memory_id)
    assert len(ids) == 3
    hits = (await stub.SearchMemories(svc.SearchMemoriesRequest(
        scope=_request(scope, "", []).scope, query="그렇게 생각해", limit=10))).results
    contents = [h.memory.content for h in hits]
    assert contents.count(line[1]) == 1
    assert contents.count(TALK[0][1]) == 1


async def test_every_bad_field_is_named_and_nothing_is_written(stub: Stub, engine: MemoryEngine, scope: Scope) -> None:
    """INVALID_ARGUMENT with a BadRequest naming each bad field; the scope stays empty."""
    bad = svc.StoreDialogueRequest(
        scope=pb.Scope(user_id=scope.user_id, heroine_id="Not A Heroine"),
        dialogue=ex_pb.Dialogue(dialogue_id="", turns=[
            ex_pb.DialogueTurn(speaker=pb.SPEAKER_UNSPECIFIED, text="안녕"),
            ex_pb.DialogueTurn(speaker=pb.SPEAKER_USER, text=""),
            ex_pb.DialogueTurn(speaker=pb.SPEAKER_USER, text="x" * 5000, speaker_name=" 민수"),
            ex_pb.DialogueTurn(speaker=pb.SPEAKER_HEROINE, text="응", said_at=timestamp_pb2.Timestamp(nanos=-1)),
        ]), first_position=-1)
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.StoreDialogue(bad)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert set(violations(err.value)) == {
        "scope.heroine_id", "dialogue.dialogue_id", "dialogue.turns[0].speaker", "dialogue.turns[1].text",
        "dialogue.turns[2].text", "dialogue.turns[2].speaker_name", "dialogue.turns[3].said_at", "first_position"}
    for request, field in ((svc.StoreDialogueRequest(), "scope"),
                           (svc.StoreDialogueRequest(scope=_request(scope, "", []).scope), "dialogue"),
                           (_request(scope, "d", []), "dialogue.turns")):
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.StoreDialogue(request)
        assert field in violations(err.value)
    assert await _count(engine, scope) == 0


async def test_extract_without_extraction_configured_is_refused_before_writing(
    stub: Stub, engine: MemoryEngine, scope: Scope
) -> None:
    """Extract on a server without extraction: FAILED_PRECONDITION, and the turns are not stored either."""
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.StoreDialogue(_request(scope, "d", _turns(TALK), extract=True))
    assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert await _count(engine, scope) == 0


async def test_one_players_dialogue_never_reaches_another_scope(stub: Stub, engine: MemoryEngine, scope: Scope) -> None:
    """The same dialogue id in another scope is another dialogue: its own rows, no resend, no context, no hits."""
    mine = await stub.StoreDialogue(_request(scope, "shared-id", _turns(TALK[:2])))
    other = Scope(f"other-{uuid.uuid4().hex[:8]}", scope.heroine_id)
    theirs = await stub.StoreDialogue(_request(other, "shared-id", _turns(TALK[2:3]), first=2))
    assert theirs.turns[0].outcome == pb.STORE_OUTCOME_CREATED
    links = await stub.ListLinks(svc.ListLinksRequest(scope=_request(other, "", []).scope,
                                                      memory_id=theirs.turns[0].memory_id))
    assert not links.related  # no turn 1 in its own scope to link to, none taken from mine
    alone = await _views_vector(engine, turn_views(Line(*TALK[2]), None, None, "letia"))
    (vector,) = await _vectors(engine, [theirs.turns[0].memory_id])
    assert _cosine(vector, alone) > 0.999
    resend = await stub.StoreDialogue(_request(other, "shared-id", _turns(TALK[:2])))
    assert {r.memory_id for r in resend.turns}.isdisjoint({r.memory_id for r in mine.turns})
    hits = (await stub.SearchMemories(svc.SearchMemoriesRequest(scope=_request(other, "", []).scope,
                                                                query="경주", limit=10))).results
    assert {h.memory.memory_id for h in hits}.isdisjoint({r.memory_id for r in mine.turns})
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.GetMemory(svc.GetMemoryRequest(scope=_request(other, "", []).scope,
                                                  memory_id=mine.turns[0].memory_id))
    assert err.value.code() == grpc.StatusCode.NOT_FOUND


EXTRACTED = [
    {"speaker": "user", "subject": "user", "subject_id": "user", "content_type": "event",
     "content": "지난 화요일에 경주에 다녀옴", "importance": 6, "slot": ""},
    {"speaker": "user", "subject": "user", "subject_id": "user", "content_type": "event",
     "content": "불국사 앞에서 사진을 많이 찍음", "importance": 4, "slot": ""},
]


async def test_extraction_of_a_stored_dialogue_links_its_facts_to_the_turns(
    ex_stub: Stub, chat: ChatEndpoint, scope: Scope
) -> None:
    """Extract queues one job over the whole dialogue (streamed in two requests); its facts derive from the turns.

    ``deepen`` from a fact reaches the words said: ListLinks' parents are the turns, their children the facts.
    """
    chat.play(facts_answer(*EXTRACTED))
    head = await ex_stub.StoreDialogue(_request(scope, "trip", _turns(TALK[:2])))
    tail = await ex_stub.StoreDialogue(_request(scope, "trip", _turns(TALK[2:], start=2), first=2, extract=True))
    assert tail.job.dialogue_id == "trip"
    turn_ids = {r.memory_id for r in (*head.turns, *tail.turns)}
    wire_scope = _request(scope, "", []).scope
    job = tail.job
    for _ in range(200):
        if job.state == ex_pb.EXTRACTION_JOB_STATE_DONE:
            break
        await asyncio.sleep(0.05)
        job = (await ex_stub.GetExtractionJob(ex_pb.GetExtractionJobRequest(user_id=scope.user_id,
                                                                            job_id=job.job_id))).job
    assert job.state == ex_pb.EXTRACTION_JOB_STATE_DONE, job.last_error
    assert len(job.memories) == 2
    prompt = chat.requests[0]["messages"][-1]["content"]
    assert all(text in prompt for _, text, _ in TALK)  # the whole dialogue, both requests' turns
    for extracted in job.memories:
        links = await ex_stub.ListLinks(svc.ListLinksRequest(scope=wire_scope, memory_id=extracted.result.memory_id))
        assert _ends(links.parents, extracted.result.memory_id) == turn_ids
    children = await ex_stub.ListLinks(svc.ListLinksRequest(scope=wire_scope, memory_id=head.turns[0].memory_id))
    assert _ends(children.children, head.turns[0].memory_id) == {m.result.memory_id for m in job.memories}
    # Asked again with extract, the dialogue keeps its one job.
    again = await ex_stub.StoreDialogue(_request(scope, "trip", _turns(TALK[4:], start=4), first=4, extract=True))
    assert again.job.job_id == job.job_id
    assert again.turns[0].outcome == pb.STORE_OUTCOME_DUPLICATE
