"""End to end over gRPC: Korean store-then-search, isolation between heroines, errors with field names."""

from __future__ import annotations

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status
from npc_memory.domain.model import Scope
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc


def _scope(s: Scope, heroine: str | None = None) -> pb.Scope:
    return pb.Scope(user_id=s.user_id, heroine_id=heroine or s.heroine_id)


def _fact(content: str, **kw: object) -> pb.MemoryInput:
    base: dict[str, object] = {"speaker": pb.SPEAKER_USER, "subject": pb.SUBJECT_USER, "content": content}
    base.update(kw)
    return pb.MemoryInput(**base)  # type: ignore[arg-type]


def _violations(err: grpc.aio.AioRpcError) -> dict[str, str]:
    status = rpc_status.from_call(err)
    assert status is not None
    out = {}
    for detail in status.details:
        bad = error_details_pb2.BadRequest()
        assert detail.Unpack(bad)
        out.update({v.field: v.description for v in bad.field_violations})
    return out


async def test_korean_store_then_search_finds_the_fact(stub: svc_grpc.MemoryServiceAsyncStub, scope: Scope) -> None:
    """A Korean fact stored for letia comes back first for a paraphrased Korean question, with scores."""
    stored = await stub.StoreMemories(svc.StoreMemoriesRequest(scope=_scope(scope), memories=[
        _fact("고양이를 좋아함", importance=7),
        _fact("매운 음식을 못 먹음"),
        _fact("마을이 평화로움", subject=pb.SUBJECT_WORLD),
    ]))
    assert [r.outcome for r in stored.results] == [pb.STORE_OUTCOME_CREATED] * 3
    found = await stub.SearchMemories(svc.SearchMemoriesRequest(scope=_scope(scope), query="고양이 좋아해?"))
    top = found.results[0]
    assert top.memory.content == "고양이를 좋아함"
    assert top.memory.memory_id == stored.results[0].memory_id
    assert 0 < top.scores.relevance <= 1
    assert top.scores.keyword == 1.0
    assert top.scores.importance == 0.7  # exactly 7 / 10, as a designer reads it
    assert top.scores.final == pytest.approx(
        0.15 * top.scores.recency + 0.15 * 0.7 + 0.5 * top.scores.relevance + 0.2 * top.scores.keyword
    )


async def test_a_heroine_never_sees_another_heroines_memories(
    stub: svc_grpc.MemoryServiceAsyncStub, scope: Scope
) -> None:
    """What the player told roco is invisible to letia, by search, list and get."""
    roco = await stub.StoreMemories(svc.StoreMemoriesRequest(
        scope=_scope(scope, "roco"), memories=[_fact("로코에게만 말한 비밀: 수영을 못함")]
    ))
    await stub.StoreMemories(svc.StoreMemoriesRequest(scope=_scope(scope), memories=[_fact("레티아와 산책함")]))
    found = await stub.SearchMemories(svc.SearchMemoriesRequest(scope=_scope(scope), query="수영 비밀"))
    assert all("수영" not in r.memory.content for r in found.results)
    assert {r.memory.scope.heroine_id for r in found.results} == {"letia"}
    listed = await stub.ListMemories(svc.ListMemoriesRequest(scope=_scope(scope)))
    assert [m.content for m in listed.memories] == ["레티아와 산책함"]
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.GetMemory(svc.GetMemoryRequest(scope=_scope(scope), memory_id=roco.results[0].memory_id))
    assert err.value.code() == grpc.StatusCode.NOT_FOUND


@pytest.mark.parametrize(
    ("memory", "field"),
    [
        pytest.param(_fact(""), "memories[0].content", id="empty-content"),
        pytest.param(_fact("x" * 2001), "memories[0].content", id="content-too-long"),
        pytest.param(_fact("a\x00b"), "memories[0].content", id="nul-in-content"),
        pytest.param(_fact("ok", importance=11), "memories[0].importance", id="importance-11"),
        pytest.param(_fact("ok", importance=-1), "memories[0].importance", id="importance-negative"),
        pytest.param(_fact("ok", speaker=0), "memories[0].speaker", id="speaker-missing"),
        pytest.param(_fact("ok", speaker=9), "memories[0].speaker", id="speaker-unknown"),
        pytest.param(_fact("ok", content_type=42), "memories[0].content_type", id="content-type-unknown"),
        pytest.param(_fact("ok", subject_id="letia"), "memories[0].subject_id", id="user-subject-id"),
        pytest.param(_fact("ok", embedding=[0.1, 0.2]), "memories[0].embedding", id="embedding-size"),
        pytest.param(_fact("ok", supersedes=["not-a-uuid"]), "memories[0].supersedes[0]", id="bad-id"),
    ],
)
async def test_bad_store_input_is_invalid_argument_naming_the_field_and_writes_nothing(
    stub: svc_grpc.MemoryServiceAsyncStub, scope: Scope, memory: pb.MemoryInput, field: str
) -> None:
    """Each bad field gives INVALID_ARGUMENT with a BadRequest naming it; the good fact beside it is not written."""
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.StoreMemories(svc.StoreMemoriesRequest(
            scope=_scope(scope), memories=[memory, _fact("이건 괜찮은 사실")]
        ))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert field in _violations(err.value)
    listed = await stub.ListMemories(svc.ListMemoriesRequest(scope=_scope(scope), include_invalidated=True))
    assert list(listed.memories) == []


@pytest.mark.parametrize(
    ("request_", "field"),
    [
        pytest.param(svc.SearchMemoriesRequest(), "scope", id="no-scope"),
        pytest.param(svc.SearchMemoriesRequest(scope=pb.Scope(user_id="p", heroine_id="")), "scope.heroine_id",
                     id="empty-heroine"),
        pytest.param(svc.SearchMemoriesRequest(scope=pb.Scope(user_id="", heroine_id="letia")), "scope.user_id",
                     id="empty-user"),
        pytest.param(svc.SearchMemoriesRequest(scope=pb.Scope(user_id="p", heroine_id="letia"), limit=101),
                     "limit", id="limit-over-max"),
        pytest.param(svc.SearchMemoriesRequest(scope=pb.Scope(user_id="p", heroine_id="letia"),
                                               query_embedding=[1.0] * 3), "query_embedding", id="vector-size"),
        pytest.param(svc.SearchMemoriesRequest(scope=pb.Scope(user_id="p", heroine_id="letia"),
                                               weights=pb.Weights(recency=-1)), "weights.recency",
                     id="negative-weight"),
        pytest.param(svc.SearchMemoriesRequest(scope=pb.Scope(user_id="p", heroine_id="letia"), fusion=7),  # type: ignore[arg-type]
                     "fusion", id="unknown-fusion"),
    ],
)
async def test_bad_search_input_is_invalid_argument_naming_the_field(
    stub: svc_grpc.MemoryServiceAsyncStub, request_: svc.SearchMemoriesRequest, field: str
) -> None:
    """Malformed searches are rejected with the field named, never INTERNAL."""
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.SearchMemories(request_)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert field in _violations(err.value)


async def test_malformed_memory_id_and_page_token_are_invalid_argument(
    stub: svc_grpc.MemoryServiceAsyncStub, scope: Scope
) -> None:
    """Ids and tokens the service did not make are named as bad fields."""
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.GetMemory(svc.GetMemoryRequest(scope=_scope(scope), memory_id="42"))
    assert "memory_id" in _violations(err.value)
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.ListMemories(svc.ListMemoriesRequest(scope=_scope(scope), page_token="garbage!!"))
    assert "page_token" in _violations(err.value)
