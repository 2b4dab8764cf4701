"""No call in one scope returns or changes a row of another, whatever foreign ids it carries.

Every RPC in the service descriptor must have a case below: an RPC added later without one fails
``test_every_rpc_has_an_isolation_case``.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC
from typing import TYPE_CHECKING, Any

import grpc
import pytest
from google.protobuf import field_mask_pb2
from google.protobuf.message import Message
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from npc_memory.domain.paging import Cursor, HistoryCursor, encode_cursor, encode_history_cursor
from npc_memory.engine import MemoryEngine
from npc_memory_client.v1 import context_pb2 as ctx_pb
from npc_memory_client.v1 import extraction_pb2 as ex_pb
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc

if TYPE_CHECKING:
    from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc

    Stub = svc_grpc.MemoryServiceAsyncStub

SERVICE = svc.DESCRIPTOR.services_by_name["MemoryService"]
HEROINES = ("letia", "lupames", "roco")
Case = Callable[["Stub", pb.Scope, pb.Memory, list[float]], Awaitable[Message | None]]


def _fact(content: str, vector: list[float], supersedes: str = "") -> pb.MemoryInput:
    return pb.MemoryInput(speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, content=content, slot="home",
                          content_type=pb.CONTENT_TYPE_PERSONAL, importance=9, embedding=vector,
                          supersedes=[supersedes] if supersedes else [])


async def _store(stub: Stub, me: pb.Scope, victim: pb.Memory, vector: list[float]) -> Message:
    # The same text and slot as the victim, and its id in supersedes: neither a duplicate nor a supersession.
    return await stub.StoreMemories(svc.StoreMemoriesRequest(scope=me, memories=[
        _fact(victim.content, vector), _fact("다른 이야기 " + victim.content, vector, victim.memory_id)]))


async def _dialogue(stub: Stub, me: pb.Scope, victim: pb.Memory, vector: list[float]) -> Message:
    # The victim's line, continuing a dialogue named after the victim: no stored turn of another scope is its context,
    # its resend or its link (tests/api/test_store_dialogue.py stores the same dialogue id in two scopes).
    return await stub.StoreDialogue(svc.StoreDialogueRequest(scope=me, first_position=1, dialogue=ex_pb.Dialogue(
        dialogue_id=victim.memory_id, turns=[ex_pb.DialogueTurn(speaker=pb.SPEAKER_USER, text=victim.content)])))


async def _search(stub: Stub, me: pb.Scope, victim: pb.Memory, vector: list[float]) -> Message:
    return await stub.SearchMemories(svc.SearchMemoriesRequest(scope=me, query=victim.content,
                                                               query_embedding=vector, limit=100))


async def _get(stub: Stub, me: pb.Scope, victim: pb.Memory, vector: list[float]) -> Message:
    return await stub.GetMemory(svc.GetMemoryRequest(scope=me, memory_id=victim.memory_id))


async def _list(stub: Stub, me: pb.Scope, victim: pb.Memory, vector: list[float]) -> Message:
    token = encode_cursor(Cursor(victim.valid_at.ToDatetime().replace(tzinfo=UTC),
                                 uuid.UUID(victim.memory_id)))
    return await stub.ListMemories(svc.ListMemoriesRequest(scope=me, page_token=token, include_invalidated=True,
                                                           page_size=500))


async def _invalidate(stub: Stub, me: pb.Scope, victim: pb.Memory, vector: list[float]) -> Message:
    return await stub.InvalidateMemory(svc.InvalidateMemoryRequest(scope=me, memory_id=victim.memory_id))


async def _update(stub: Stub, me: pb.Scope, victim: pb.Memory, vector: list[float]) -> Message:
    return await stub.UpdateMemory(svc.UpdateMemoryRequest(
        scope=me, memory_id=victim.memory_id, importance=1, update_mask=field_mask_pb2.FieldMask(paths=["importance"])))


async def _history(stub: Stub, me: pb.Scope, victim: pb.Memory, vector: list[float]) -> Message:
    # A page token positioned just before the victim: in the victim's scope its next page starts with the victim.
    token = encode_history_cursor(HistoryCursor(victim.valid_at.ToDatetime().replace(tzinfo=UTC),
                                                victim.created_at.ToDatetime().replace(tzinfo=UTC), uuid.UUID(int=0)))
    seen = svc.GetMemoryHistoryResponse()
    for request in (svc.GetMemoryHistoryRequest(scope=me, subject_id="user", slot="home"),
                    svc.GetMemoryHistoryRequest(scope=me, subject_id="user", slot="home", page_token=token),
                    svc.GetMemoryHistoryRequest(scope=me, memory_id=victim.memory_id, page_token=token),
                    svc.GetMemoryHistoryRequest(scope=me, memory_id=victim.memory_id)):
        try:
            seen.memories.extend((await stub.GetMemoryHistory(request)).memories)
        except grpc.aio.AioRpcError as exc:  # the victim's chain is not in this scope
            if exc.code() != grpc.StatusCode.NOT_FOUND:
                raise
    return seen


async def _forget(stub: Stub, me: pb.Scope, victim: pb.Memory, vector: list[float]) -> Message | None:
    if me.user_id == victim.scope.user_id:  # forgetting one's own player is meant to reach every heroine
        return None
    return await stub.ForgetPlayer(svc.ForgetPlayerRequest(user_id=me.user_id))


async def _expand(stub: Stub, me: pb.Scope, victim: pb.Memory, vector: list[float]) -> Message:
    return await stub.ExpandMemory(svc.ExpandMemoryRequest(scope=me, memory_id=victim.memory_id))


async def _links(stub: Stub, me: pb.Scope, victim: pb.Memory, vector: list[float]) -> Message:
    # A link to another scope's memory is refused on the way in, and another scope's links are not listed.
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await stub.StoreMemories(svc.StoreMemoriesRequest(scope=me, memories=[pb.MemoryInput(
            speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, content="링크 시도", embedding=vector,
            related=[pb.MemoryRef(memory_id=victim.memory_id)], parents=[pb.MemoryRef(memory_id=victim.memory_id)],
        )]))
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    return await stub.ListLinks(svc.ListLinksRequest(scope=me, memory_id=victim.memory_id))


async def _save(stub: Stub, me: pb.Scope, victim: pb.Memory, vector: list[float]) -> Message:
    return await stub.CreateSavePoint(svc.CreateSavePointRequest(user_id=me.user_id, save_id="iso"))


async def _load(stub: Stub, me: pb.Scope, victim: pb.Memory, vector: list[float]) -> Message | None:
    if me.user_id == victim.scope.user_id:  # loading one's own save is meant to change every heroine's view
        return None
    return await stub.LoadSavePoint(svc.LoadSavePointRequest(user_id=me.user_id, save_id="iso"))


async def _saves(stub: Stub, me: pb.Scope, victim: pb.Memory, vector: list[float]) -> Message:
    return await stub.ListSavePoints(svc.ListSavePointsRequest(user_id=me.user_id))


async def _drop(stub: Stub, me: pb.Scope, victim: pb.Memory, vector: list[float]) -> Message | None:
    if me.user_id == victim.scope.user_id:
        return None
    return await stub.DropTimeline(svc.DropTimelineRequest(user_id=me.user_id, timeline_id=victim.timeline_id + 10_000))


async def _extract(stub: Stub, me: pb.Scope, victim: pb.Memory, vector: list[float]) -> Message | None:
    # This suite's server has no chat model: the dialogue is refused before anything is written. Jobs of
    # another player are covered by _job here and by tests/api/test_extraction.py against a scripted model.
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await stub.ExtractMemories(ex_pb.ExtractMemoriesRequest(scope=me, dialogue=ex_pb.Dialogue(
            dialogue_id=victim.memory_id, turns=[ex_pb.DialogueTurn(speaker=pb.SPEAKER_USER, text="서울")])))
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    return None


async def _job(stub: Stub, me: pb.Scope, victim: pb.Memory, vector: list[float]) -> Message | None:
    # Without a model the jobs RPCs are refused outright (FAILED_PRECONDITION); with one, another player's job
    # is NOT_FOUND (tests/api/test_extraction.py). Either way nothing of the victim comes back.
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await stub.GetExtractionJob(ex_pb.GetExtractionJobRequest(user_id=me.user_id, job_id=victim.memory_id))
    assert refused.value.code() in {grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.NOT_FOUND}
    return None


async def _context(stub: Stub, me: pb.Scope, victim: pb.Memory, vector: list[float]) -> Message:
    # Even asking for shared memories, a private memory of another heroine never enters the context.
    return await stub.BuildContext(ctx_pb.BuildContextRequest(
        scope=me, utterance="서울에 산다", token_budget=500, include_shared=True))


CASES: dict[str, Case] = {
    "StoreMemories": _store, "StoreDialogue": _dialogue, "SearchMemories": _search, "GetMemory": _get,
    "ListMemories": _list,
    "InvalidateMemory": _invalidate, "UpdateMemory": _update, "GetMemoryHistory": _history,
    "ForgetPlayer": _forget, "ExpandMemory": _expand, "ListLinks": _links, "CreateSavePoint": _save,
    "LoadSavePoint": _load, "ListSavePoints": _saves, "DropTimeline": _drop, "ExtractMemories": _extract,
    "GetExtractionJob": _job, "BuildContext": _context,
}


def test_every_rpc_has_an_isolation_case() -> None:
    """Each MemoryService RPC has a case here, so a new RPC cannot skip the isolation property."""
    missing = [m.name for m in SERVICE.methods if m.name not in CASES]
    assert not missing, f"add an isolation case to tests/api/test_isolation.py for {missing}"


def _memory_ids(message: Message | None) -> set[str]:
    """Every memory_id anywhere in a response."""
    found: set[str] = set()
    if message is None:
        return found
    for field, value in message.ListFields():
        values = value if field.is_repeated else [value]
        for v in values:
            if isinstance(v, Message):
                found |= _memory_ids(v)
            elif field.name == "memory_id":
                found.add(str(v))
    return found


async def _snapshot(stub: Stub, scope: pb.Scope) -> list[bytes]:
    page = await stub.ListMemories(svc.ListMemoriesRequest(scope=scope, include_invalidated=True, page_size=500))
    return sorted(m.SerializeToString(deterministic=True) for m in page.memories)


@settings(max_examples=12, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(players=st.lists(st.sampled_from(["p1", "p2", "p3"]), min_size=2, max_size=2),
       heroines=st.lists(st.sampled_from(HEROINES), min_size=2, max_size=2))
async def test_no_call_reaches_another_scope(
    stub: Stub, engine: MemoryEngine, players: list[str], heroines: list[str]
) -> None:
    """Every RPC, called in one scope with another scope's memory id, returns none of its rows and changes none."""
    run = uuid.uuid4().hex[:6]
    victim_scope = pb.Scope(user_id=f"{players[0]}-{run}", heroine_id=heroines[0])
    me = pb.Scope(user_id=f"{players[1]}-{run}", heroine_id=heroines[1])
    if victim_scope == me:
        me = pb.Scope(user_id=me.user_id, heroine_id=next(h for h in HEROINES if h != heroines[0]))
    vector = [1.0] + [0.0] * (engine.embedder.dim - 1)
    stored = await stub.StoreMemories(svc.StoreMemoriesRequest(scope=victim_scope, memories=[
        _fact(f"{run} 서울에 산다", vector)]))
    victim = (await stub.GetMemory(svc.GetMemoryRequest(scope=victim_scope,
                                                         memory_id=stored.results[0].memory_id))).memory
    before = await _snapshot(stub, victim_scope)
    refusals: list[tuple[str, grpc.StatusCode]] = []
    for method in SERVICE.methods:
        try:
            answer = await CASES[method.name](stub, me, victim, vector)
        except grpc.aio.AioRpcError as exc:
            refusals.append((method.name, exc.code()))
            continue
        assert victim.memory_id not in _memory_ids(answer), method.name
        assert not _foreign_scopes(answer, me), method.name
    assert all(code in {grpc.StatusCode.NOT_FOUND, grpc.StatusCode.INVALID_ARGUMENT} for _, code in refusals), refusals
    assert await _snapshot(stub, victim_scope) == before


def _foreign_scopes(message: Message | None, me: pb.Scope) -> list[Any]:
    """Scopes other than ``me`` anywhere in a response."""
    if message is None:
        return []
    out: list[Any] = []
    for field, value in message.ListFields():
        values = value if field.is_repeated else [value]
        for v in values:
            if isinstance(v, pb.Scope):
                if v != me:
                    out.append(v)
            elif isinstance(v, Message):
                out += _foreign_scopes(v, me)
    return out

