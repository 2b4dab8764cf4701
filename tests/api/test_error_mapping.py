"""What a client sees when the write rules refuse a request: the status code, the message and the field named."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import grpc
import pytest
import pytest_asyncio
from google.protobuf import field_mask_pb2, timestamp_pb2
from google.rpc import error_details_pb2
from grpc_status import rpc_status
from npc_memory.domain.model import Scope
from npc_memory.embedding.none import CallerVectorsOnly
from npc_memory.engine import MemoryEngine
from npc_memory.server import create_server
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc

if TYPE_CHECKING:
    Stub = svc_grpc.MemoryServiceAsyncStub

DAY0 = datetime(2024, 3, 1, tzinfo=UTC)


def _scope(scope: Scope) -> pb.Scope:
    return pb.Scope(user_id=scope.user_id, heroine_id=scope.heroine_id)


def _ts(day: int) -> timestamp_pb2.Timestamp:
    ts = timestamp_pb2.Timestamp()
    ts.FromDatetime(DAY0 + timedelta(days=day))
    return ts


def _fact(content: str, day: int, **kw: object) -> pb.MemoryInput:
    return pb.MemoryInput(speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, content=content,
                          valid_at=_ts(day), **kw)  # type: ignore[arg-type]


def _refusal(err: grpc.aio.AioRpcError) -> tuple[grpc.StatusCode, str, dict[str, str]]:
    """The status code, the message and the BadRequest violations (field → description) of a failed call."""
    status = rpc_status.from_call(err)
    assert status is not None
    violations: dict[str, str] = {}
    for detail in status.details:
        bad = error_details_pb2.BadRequest()
        assert detail.Unpack(bad)
        violations.update({v.field: v.description for v in bad.field_violations})
    return err.code(), status.message, violations


async def _store_one(stub: Stub, scope: Scope, content: str, day: int) -> str:
    stored = await stub.StoreMemories(svc.StoreMemoriesRequest(scope=_scope(scope), memories=[_fact(content, day)]))
    return stored.results[0].memory_id


async def _store_fails(stub: Stub, scope: Scope, *facts: pb.MemoryInput, request_id: str = "") -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.StoreMemories(svc.StoreMemoriesRequest(scope=_scope(scope), memories=list(facts),
                                                          request_id=request_id))
    return err.value


async def test_unknown_supersedes_target_names_its_position(stub: Stub, scope: Scope) -> None:
    """An id not in the scope → INVALID_ARGUMENT naming memories[i].supersedes[j]."""
    known = await _store_one(stub, scope, "레티아와 처음 만남", 1)
    missing = str(uuid.uuid4())
    err = await _store_fails(stub, scope, _fact("꽃을 선물함", 5),
                             _fact("레티아와 화해함", 5, supersedes=[known, missing]))
    description = f"no memory {missing} in this scope"
    assert _refusal(err) == (grpc.StatusCode.INVALID_ARGUMENT, f"memories[1].supersedes[1]: {description}",
                             {"memories[1].supersedes[1]": description})


async def test_closed_supersedes_target_is_failed_precondition(stub: Stub, scope: Scope) -> None:
    """A target already closed → FAILED_PRECONDITION, the message naming the position, no BadRequest."""
    target = await _store_one(stub, scope, "레티아와 싸웠음", 1)
    await stub.InvalidateMemory(svc.InvalidateMemoryRequest(scope=_scope(scope), memory_id=target, invalid_at=_ts(2)))
    err = await _store_fails(stub, scope, _fact("레티아와 화해함", 5, supersedes=[target]))
    assert _refusal(err) == (grpc.StatusCode.FAILED_PRECONDITION,
                             f"memories[0].supersedes[0]: memory {target} is already closed", {})


async def test_supersedes_target_newer_than_the_fact_is_invalid_argument(stub: Stub, scope: Scope) -> None:
    """A target valid after the fact's valid_at → INVALID_ARGUMENT naming the position."""
    target = await _store_one(stub, scope, "레티아와 싸웠음", 9)
    err = await _store_fails(stub, scope, _fact("레티아와 화해함", 5, supersedes=[target]))
    description = f"memory {target} became valid after this fact's valid_at"
    assert _refusal(err) == (grpc.StatusCode.INVALID_ARGUMENT, f"memories[0].supersedes[0]: {description}",
                             {"memories[0].supersedes[0]": description})


async def test_reused_request_id_names_request_id(stub: Stub, scope: Scope) -> None:
    """The same live request_id with different facts → INVALID_ARGUMENT naming request_id."""
    await stub.StoreMemories(svc.StoreMemoriesRequest(scope=_scope(scope), memories=[_fact("김밥을 좋아함", 1)],
                                                      request_id="house-1"))
    err = await _store_fails(stub, scope, _fact("김밥을 싫어함", 1), request_id="house-1")
    description = "was already used for a different request within the idempotency window"
    assert _refusal(err) == (grpc.StatusCode.INVALID_ARGUMENT, f"request_id: {description}",
                             {"request_id": description})


async def test_invalidating_a_closed_memory_is_failed_precondition(stub: Stub, scope: Scope) -> None:
    """A second InvalidateMemory → FAILED_PRECONDITION saying when the memory was closed."""
    memory_id = await _store_one(stub, scope, "비 오는 날을 좋아함", 1)
    await stub.InvalidateMemory(svc.InvalidateMemoryRequest(scope=_scope(scope), memory_id=memory_id,
                                                            invalid_at=_ts(3)))
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.InvalidateMemory(svc.InvalidateMemoryRequest(scope=_scope(scope), memory_id=memory_id))
    code, message, violations = _refusal(err.value)
    prefix = f"memory {memory_id} was already closed at "
    assert (code, violations) == (grpc.StatusCode.FAILED_PRECONDITION, {})
    assert message.startswith(prefix)
    assert datetime.fromisoformat(message.removeprefix(prefix)) == DAY0 + timedelta(days=3)


async def test_invalid_at_before_valid_at_names_invalid_at(stub: Stub, scope: Scope) -> None:
    """Closing a memory before it began → INVALID_ARGUMENT naming invalid_at."""
    memory_id = await _store_one(stub, scope, "비 오는 날을 좋아함", 5)
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.InvalidateMemory(svc.InvalidateMemoryRequest(scope=_scope(scope), memory_id=memory_id,
                                                                invalid_at=_ts(2)))
    description = "is before the memory's valid_at"
    assert _refusal(err.value) == (grpc.StatusCode.INVALID_ARGUMENT, f"invalid_at: {description}",
                                   {"invalid_at": description})


def _content_update(scope: Scope, memory_id: str, content: str, day: int | None = None) -> svc.UpdateMemoryRequest:
    request = svc.UpdateMemoryRequest(scope=_scope(scope), memory_id=memory_id, content=content,
                                      update_mask=field_mask_pb2.FieldMask(paths=["content"]))
    if day is not None:
        request.valid_at.CopyFrom(_ts(day))
    return request


async def test_editing_a_closed_memory_is_failed_precondition(stub: Stub, scope: Scope) -> None:
    """A content change of a closed memory → FAILED_PRECONDITION."""
    memory_id = await _store_one(stub, scope, "고양이를 좋아함", 1)
    await stub.InvalidateMemory(svc.InvalidateMemoryRequest(scope=_scope(scope), memory_id=memory_id,
                                                            invalid_at=_ts(2)))
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.UpdateMemory(_content_update(scope, memory_id, "강아지를 좋아함"))
    assert _refusal(err.value) == (grpc.StatusCode.FAILED_PRECONDITION,
                                   f"memory {memory_id} is closed; only valid memories can be edited", {})


async def test_new_version_before_the_current_one_names_valid_at(stub: Stub, scope: Scope) -> None:
    """A content change valid before the current version → INVALID_ARGUMENT naming valid_at."""
    memory_id = await _store_one(stub, scope, "고양이를 좋아함", 5)
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.UpdateMemory(_content_update(scope, memory_id, "강아지를 좋아함", day=2))
    description = "is before the current version's valid_at"
    assert _refusal(err.value) == (grpc.StatusCode.INVALID_ARGUMENT, f"valid_at: {description}",
                                   {"valid_at": description})


@pytest_asyncio.fixture
async def caller_vectors_stub(engine: MemoryEngine) -> AsyncIterator[Stub]:
    """A second server over the test database whose embedder is 'none': callers must send vectors."""
    none = replace(engine, embedder=CallerVectorsOnly(engine.embedder.dim, engine.embedder.name))
    server, port, _ = await create_server(none, "127.0.0.1:0")
    await server.start()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        yield svc_grpc.MemoryServiceStub(channel)
    await server.stop(0)


async def test_store_without_a_vector_and_no_embedder_names_the_embedding(
    caller_vectors_stub: Stub, scope: Scope
) -> None:
    """With embedder 'none' a fact without a vector → INVALID_ARGUMENT naming memories[i].embedding."""
    vector = [1.0] + [0.0] * 383
    err = await _store_fails(caller_vectors_stub, scope, _fact("딸기를 좋아함", 1, embedding=vector),
                             _fact("포도를 좋아함", 1))
    description = "required: this server has no embedder configured"
    assert _refusal(err) == (grpc.StatusCode.INVALID_ARGUMENT, f"memories[1].embedding: {description}",
                             {"memories[1].embedding": description})


async def test_content_edit_without_an_embedder_names_the_content(
    caller_vectors_stub: Stub, stub: Stub, scope: Scope
) -> None:
    """With embedder 'none' a content edit → INVALID_ARGUMENT naming UpdateMemoryRequest.content; nothing changes."""
    memory_id = await _store_one(stub, scope, "고양이를 좋아함", 1)
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await caller_vectors_stub.UpdateMemory(_content_update(scope, memory_id, "강아지를 좋아함"))
    code, message, violations = _refusal(err.value)
    assert (code, list(violations)) == (grpc.StatusCode.INVALID_ARGUMENT, ["content"])
    assert "no embedder" in violations["content"]
    assert message == f"content: {violations['content']}"
    listed = await stub.ListMemories(svc.ListMemoriesRequest(scope=_scope(scope), include_invalidated=True))
    assert [m.content for m in listed.memories] == ["고양이를 좋아함"]
