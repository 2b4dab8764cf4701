"""GetMemoryHistory comes in pages: bounded by page_size and by bytes, each row exactly once, in order."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING
from uuid import UUID

import grpc
import numpy as np
import pytest
from bad_request import violations
from google.protobuf import timestamp_pb2
from npc_memory.domain.model import ContentType, NewMemory, Scope, Speaker, Subject
from npc_memory.domain.paging import Cursor, HistoryCursor, encode_cursor, encode_history_cursor
from npc_memory.engine import MemoryEngine
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc

if TYPE_CHECKING:
    from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc

    Stub = svc_grpc.MemoryServiceAsyncStub

ANIMALS = ("고양이", "강아지", "토끼", "거북이", "앵무새")
DAY1 = datetime.now(UTC).replace(microsecond=0) - timedelta(days=30)


def _ts(when: datetime) -> timestamp_pb2.Timestamp:
    out = timestamp_pb2.Timestamp()
    out.FromDatetime(when)
    return out


async def _five_versions(stub: Stub, scope: pb.Scope) -> list[str]:
    """Five facts in one slot, a day apart, each superseding the one before: one chain of five."""
    ids = []
    for n, animal in enumerate(ANIMALS):
        response = await stub.StoreMemories(svc.StoreMemoriesRequest(scope=scope, memories=[pb.MemoryInput(
            speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, content=f"좋아하는 동물은 {animal}",
            slot="favorite_animal", content_type=pb.CONTENT_TYPE_PREFERENCE, valid_at=_ts(DAY1 + timedelta(days=n)),
        )]))
        ids.append(response.results[0].memory_id)
    return ids


async def _all_pages(stub: Stub, request: svc.GetMemoryHistoryRequest) -> list[list[str]]:
    pages: list[list[str]] = []
    while True:
        response = await stub.GetMemoryHistory(request)
        pages.append([m.memory_id for m in response.memories])
        if not response.next_page_token:
            return pages
        request.page_token = response.next_page_token
        assert len(pages) < 20, "paging does not advance"


@pytest.mark.parametrize("by", ["slot", "chain"])
async def test_history_pages_by_page_size_cover_each_row_once_in_order(stub: Stub, by: str) -> None:
    """Page size 2 over a chain of five: pages of 2, 2, 1, oldest first, as the unpaged answer has them."""
    scope = pb.Scope(user_id=f"hist-{uuid.uuid4().hex[:8]}", heroine_id="letia")
    ids = await _five_versions(stub, scope)
    which = {"subject_id": "user", "slot": "favorite_animal"} if by == "slot" else {"memory_id": ids[2]}
    pages = await _all_pages(stub, svc.GetMemoryHistoryRequest(scope=scope, page_size=2, **which))  # type: ignore[arg-type]
    assert pages == [ids[0:2], ids[2:4], ids[4:5]]
    whole = await stub.GetMemoryHistory(svc.GetMemoryHistoryRequest(scope=scope, **which))  # type: ignore[arg-type]
    assert [m.memory_id for m in whole.memories] == ids
    assert not whole.next_page_token


async def test_a_history_page_stops_at_its_byte_budget(engine: MemoryEngine) -> None:
    """Five 2,000-character memories under a 10 KB budget come one per page, each exactly once, in order."""
    scope = Scope(user_id=f"hbytes-{uuid.uuid4().hex[:8]}", heroine_id="roco")
    vector = np.zeros(engine.embedder.dim, dtype=np.float32)
    vector[0] = 1.0
    await engine.store(scope, [NewMemory(
        Speaker.USER, Subject.USER, "user", ContentType.EVENT, (f"{i}번째 긴 이야기 " + "가나다라" * 500)[:2000],
        importance=5, embedding=vector, valid_at=DAY1 + timedelta(days=i),
    ) for i in range(5)])
    whole, after = await engine.history(scope, "user", None, 50, None)
    assert len(whole) == 5
    assert after is None
    pages: list[list[UUID]] = []
    while True:
        page, after = await engine.history(scope, "user", None, 50, after, max_bytes=10_000)
        pages.append([m.id for m in page])
        if after is None:
            break
    assert pages == [[m.id] for m in whole]


@pytest.mark.parametrize(
    ("field", "request_fields"),
    [
        ("page_size", {"page_size": -1}),
        ("page_size", {"page_size": 501}),
        ("page_token", {"page_token": "not-a-token"}),
        # A ListMemories token is a position of another order: not a history token.
        ("page_token", {"page_token": encode_cursor(Cursor(DAY1, uuid.uuid4()))}),
    ],
    ids=["negative-size", "size-over-max", "garbage-token", "list-token"],
)
async def test_bad_history_page_size_or_token_is_invalid_argument(
    stub: Stub, field: str, request_fields: dict[str, object]
) -> None:
    """A page size out of 1..500 or a token not from GetMemoryHistory is INVALID_ARGUMENT naming the field."""
    scope = pb.Scope(user_id=f"hbad-{uuid.uuid4().hex[:8]}", heroine_id="letia")
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.GetMemoryHistory(svc.GetMemoryHistoryRequest(
            scope=scope, subject_id="user", **request_fields))  # type: ignore[arg-type]
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert field in violations(err.value)


async def test_a_chain_page_past_its_end_is_empty_and_a_foreign_chain_is_not_found(stub: Stub) -> None:
    """A token past the chain's last row gives an empty last page; the same token on another scope's id: NOT_FOUND."""
    scope = pb.Scope(user_id=f"hend-{uuid.uuid4().hex[:8]}", heroine_id="letia")
    ids = await _five_versions(stub, scope)
    far = encode_history_cursor(HistoryCursor(DAY1 + timedelta(days=999), DAY1, uuid.uuid4()))
    past = await stub.GetMemoryHistory(svc.GetMemoryHistoryRequest(scope=scope, memory_id=ids[0], page_token=far))
    assert list(past.memories) == []
    assert not past.next_page_token
    other = pb.Scope(user_id=f"hend-{uuid.uuid4().hex[:8]}", heroine_id="letia")
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.GetMemoryHistory(svc.GetMemoryHistoryRequest(scope=other, memory_id=ids[0], page_token=far))
    assert err.value.code() == grpc.StatusCode.NOT_FOUND
