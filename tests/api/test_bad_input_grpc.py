"""Inputs an outside fuzzer found answered INTERNAL or UNKNOWN: each is INVALID_ARGUMENT naming its field."""

from __future__ import annotations

import base64
import json
import math
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import grpc
import psycopg
import pytest
from bad_request import violations
from google.protobuf import field_mask_pb2, struct_pb2, timestamp_pb2
from npc_memory.domain.model import Scope
from npc_memory.engine import MemoryEngine
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc

if TYPE_CHECKING:
    from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc

    Stub = svc_grpc.MemoryServiceAsyncStub

METHOD = "/npc_memory.v1.MemoryService/"


def _scope(scope: Scope) -> pb.Scope:
    return pb.Scope(user_id=scope.user_id, heroine_id=scope.heroine_id)


def _fact(content: str, **kw: Any) -> pb.MemoryInput:
    return pb.MemoryInput(speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, content=content, **kw)


async def count_rows(database_url: str, scope: Scope) -> int:
    """How many rows the scope has, every version and state counted."""
    async with await psycopg.AsyncConnection.connect(database_url) as conn:
        cur = await conn.execute("SELECT count(*) FROM user_memories WHERE user_id = %(u)s AND heroine_id = %(h)s",
                                 {"u": scope.user_id, "h": scope.heroine_id})
        row = await cur.fetchone()
    assert row is not None
    return int(row[0])


async def _rejected(call: Any, request: Any) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await call(request)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT, err.value.details()
    return err.value


def _metadata(value: float) -> struct_pb2.Struct:
    meta = struct_pb2.Struct()
    meta.update({"mood": "happy", "score": value})
    return meta


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf], ids=["nan", "inf", "-inf"])
async def test_non_finite_metadata_number_is_invalid_argument_and_writes_nothing(
    stub: Stub, scope: Scope, database_url: str, value: float
) -> None:
    """A NaN or infinite number in metadata (PostgreSQL jsonb cannot hold it) names memories[0].metadata."""
    err = await _rejected(stub.StoreMemories, svc.StoreMemoriesRequest(
        scope=_scope(scope), memories=[_fact("괜찮은 사실"), _fact("점수가 있는 사실", metadata=_metadata(value))]
    ))
    assert "memories[1].metadata" in violations(err)
    assert await count_rows(database_url, scope) == 0


async def test_non_finite_metadata_number_in_an_update_is_invalid_argument(stub: Stub, scope: Scope) -> None:
    """UpdateMemory with NaN inside metadata names the metadata field; the row keeps its metadata."""
    stored = await stub.StoreMemories(svc.StoreMemoriesRequest(scope=_scope(scope), memories=[_fact("비를 좋아함")]))
    memory_id = stored.results[0].memory_id
    err = await _rejected(stub.UpdateMemory, svc.UpdateMemoryRequest(
        scope=_scope(scope), memory_id=memory_id, metadata=_metadata(math.nan),
        update_mask=field_mask_pb2.FieldMask(paths=["metadata"]),
    ))
    assert "metadata" in violations(err)
    got = await stub.GetMemory(svc.GetMemoryRequest(scope=_scope(scope), memory_id=memory_id))
    assert dict(got.memory.metadata) == {}


def _token(data: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    "token",
    [
        _token({"v": "2025-01-01T00:00:00+00:00", "i": 5}),
        _token({"v": "2025-01-01T00:00:00+00:00", "i": ["a"]}),
        _token({"v": 20250101, "i": str(uuid.uuid4())}),
        _token({"v": "2025-01-01T00:00:00", "i": str(uuid.uuid4())}),
        _token([1, 2]),
        _token("text"),
        base64.urlsafe_b64encode(b"[" * 100_000).decode(),
        "한글토큰",
    ],
    ids=["int-id", "list-id", "int-time", "naive-time", "list", "string", "deep-json", "non-ascii"],
)
async def test_page_token_of_the_wrong_shape_is_invalid_argument(stub: Stub, scope: Scope, token: str) -> None:
    """A page token that decodes to JSON of another shape names page_token, never INTERNAL."""
    err = await _rejected(stub.ListMemories, svc.ListMemoriesRequest(scope=_scope(scope), page_token=token))
    assert "page_token" in violations(err)


@pytest.mark.parametrize("value", [1e308, 5e-324, 1e7], ids=["overflow", "subnormal", "over-max"])
async def test_extreme_weights_are_invalid_argument(stub: Stub, scope: Scope, value: float) -> None:
    """Weights that overflow or underflow PostgreSQL's float8 arithmetic name the weight."""
    await stub.StoreMemories(svc.StoreMemoriesRequest(scope=_scope(scope), memories=[_fact("고양이를 좋아함")]))
    for fusion in (pb.FUSION_METHOD_WEIGHTED, pb.FUSION_METHOD_RRF):
        err = await _rejected(stub.SearchMemories, svc.SearchMemoriesRequest(
            scope=_scope(scope), query="고양이", fusion=fusion,
            weights=pb.Weights(recency=value, importance=value, relevance=value, keyword=value),
        ))
        assert "weights.recency" in violations(err)


async def test_small_and_large_weights_in_range_still_search(stub: Stub, scope: Scope) -> None:
    """The accepted range's ends (1e-6 and 1e6) rank without a database error."""
    await stub.StoreMemories(svc.StoreMemoriesRequest(scope=_scope(scope), memories=[_fact("고양이를 좋아함")]))
    for value in (1e-6, 1e6):
        found = await stub.SearchMemories(svc.SearchMemoriesRequest(
            scope=_scope(scope), query="고양이",
            weights=pb.Weights(recency=value, importance=value, relevance=value, keyword=value),
        ))
        assert [r.memory.content for r in found.results] == ["고양이를 좋아함"]


async def test_search_long_after_a_fact_is_not_internal(stub: Stub, scope: Scope) -> None:
    """A fact back-dated to 1900 (an accepted valid_at) does not turn the scope's searches into INTERNAL."""
    old = timestamp_pb2.Timestamp()
    old.FromDatetime(datetime(1900, 1, 1, tzinfo=UTC))
    await stub.StoreMemories(svc.StoreMemoriesRequest(scope=_scope(scope), memories=[
        _fact("할머니 댁에 살았음", valid_at=old)
    ]))
    found = await stub.SearchMemories(svc.SearchMemoriesRequest(scope=_scope(scope), query="할머니"))
    assert [r.memory.content for r in found.results] == ["할머니 댁에 살았음"]


async def test_nul_in_a_filter_subject_id_is_invalid_argument(stub: Stub, scope: Scope) -> None:
    """A NUL character (PostgreSQL text cannot hold it) in filter.subject_ids names the entry, for list and search."""
    flt = pb.MemoryFilter(subject_ids=["letia", "ro\x00co"])
    err = await _rejected(stub.ListMemories, svc.ListMemoriesRequest(scope=_scope(scope), filter=flt))
    assert "filter.subject_ids[1]" in violations(err)
    err = await _rejected(stub.SearchMemories, svc.SearchMemoriesRequest(scope=_scope(scope), query="x", filter=flt))
    assert "filter.subject_ids[1]" in violations(err)


async def test_ids_with_a_trailing_newline_are_invalid_argument(stub: Stub, scope: Scope, database_url: str) -> None:
    """user_id, heroine_id and a heroine subject_id ending in a newline are rejected, not stored."""
    bad_user = svc.StoreMemoriesRequest(scope=pb.Scope(user_id=scope.user_id + "\n", heroine_id="letia"),
                                        memories=[_fact("사실")])
    assert "scope.user_id" in violations(await _rejected(stub.StoreMemories, bad_user))
    bad_heroine = svc.StoreMemoriesRequest(scope=pb.Scope(user_id=scope.user_id, heroine_id="letia\n"),
                                           memories=[_fact("사실")])
    assert "scope.heroine_id" in violations(await _rejected(stub.StoreMemories, bad_heroine))
    bad_subject = svc.StoreMemoriesRequest(scope=_scope(scope), memories=[
        pb.MemoryInput(speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_HEROINE, subject_id="roco\n", content="사실")
    ])
    assert "memories[0].subject_id" in violations(await _rejected(stub.StoreMemories, bad_subject))
    forget = svc.ForgetPlayerRequest(user_id=scope.user_id + "\n")
    assert "user_id" in violations(await _rejected(stub.ForgetPlayer, forget))
    assert await count_rows(database_url, scope) == 0


async def test_huge_caller_vector_is_stored_as_its_direction(
    stub: Stub, scope: Scope, engine: MemoryEngine, database_url: str
) -> None:
    """A caller embedding of 1e20s (its norm overflows float32) is stored normalised, not as an all-zero vector."""
    dim = engine.embedder.dim
    stored = await stub.StoreMemories(svc.StoreMemoriesRequest(scope=_scope(scope), memories=[
        _fact("큰 벡터", embedding=[1e20] * dim)
    ]))
    async with await psycopg.AsyncConnection.connect(database_url) as conn:
        cur = await conn.execute("SELECT vector_norm(embedding) FROM user_memories WHERE id = %(id)s",
                                 {"id": stored.results[0].memory_id})
        row = await cur.fetchone()
    assert row is not None
    assert row[0] == pytest.approx(1.0, abs=1e-5)
    found = await stub.SearchMemories(svc.SearchMemoriesRequest(scope=_scope(scope), query_embedding=[1e20] * dim))
    assert found.results[0].scores.relevance == pytest.approx(1.0, abs=1e-5)


async def test_huge_query_vector_is_searched_by_its_direction(stub: Stub, scope: Scope, engine: MemoryEngine) -> None:
    """A query vector whose float32 norm overflows still finds the fact it points at."""
    dim = engine.embedder.dim
    await stub.StoreMemories(svc.StoreMemoriesRequest(scope=_scope(scope), memories=[
        _fact("첫 번째 벡터", embedding=[1.0] + [0.0] * (dim - 1)),
        _fact("두 번째 벡터", embedding=[0.0, 1.0] + [0.0] * (dim - 2)),
    ]))
    found = await stub.SearchMemories(svc.SearchMemoriesRequest(
        scope=_scope(scope), query_embedding=[0.0, 3e38] + [0.0] * (dim - 2)
    ))
    assert found.results[0].memory.content == "두 번째 벡터"


@pytest.mark.parametrize(
    ("method", "payload"),
    [
        ("StoreMemories", b"\xff\xff\xff\xff"),
        ("SearchMemories", b"\x0a\x05\x0a\x03ab"),  # scope field whose length runs past the end
        ("StoreMemories", b"\x1a\x02\xc3\x28"),  # request_id that is not UTF-8
        ("ForgetPlayer", b"\x0a\x80"),
        ("GetMemory", b"\x08"),
    ],
    ids=["garbage", "truncated", "bad-utf8", "bad-length", "truncated-varint"],
)
async def test_undecodable_request_bytes_are_invalid_argument(server_port: int, method: str, payload: bytes) -> None:
    """Bytes that are not the request message answer INVALID_ARGUMENT naming the request, without Python internals."""
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server_port}") as channel:
        call: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(
            METHOD + method, request_serializer=None, response_deserializer=None
        )
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await call(payload)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT, err.value.details()
    details = err.value.details() or ""
    assert "not a valid npc_memory.v1." in details
    assert "Exception" not in details
    assert "<class" not in details
    assert "" in violations(err.value)


async def test_many_bad_facts_give_a_bounded_summary(stub: Stub, scope: Scope) -> None:
    """256 bad facts: INVALID_ARGUMENT (not RESOURCE_EXHAUSTED on the client) listing some and counting the rest."""
    bad = pb.MemoryInput(content="", slot=" " + "s" * 100 + " ", supersedes=["x" * 300] * 3)
    err = await _rejected(stub.StoreMemories, svc.StoreMemoriesRequest(
        scope=pb.Scope(user_id="", heroine_id=""), memories=[bad] * 256, request_id="r" * 500,
    ))
    found = violations(err)
    assert 1 <= len(found) <= 20
    assert "scope.user_id" in found
    assert all(len(f) <= 200 and len(d) <= 200 for f, d in found.items())
    assert "more" in (err.details() or "")
    assert len((err.details() or "").encode()) <= 1024


async def test_a_long_update_mask_path_gives_a_bounded_error(stub: Stub, scope: Scope) -> None:
    """An update_mask path of 100,000 characters is named (cut short), not a trailer too big for the client."""
    err = await _rejected(stub.UpdateMemory, svc.UpdateMemoryRequest(
        scope=_scope(scope), memory_id=str(uuid.uuid4()),
        update_mask=field_mask_pb2.FieldMask(paths=["p" * 100_000, "한" * 50_000]),
    ))
    found = violations(err)
    assert "update_mask" in found
    assert all(len(d.encode()) <= 200 for d in found.values())
