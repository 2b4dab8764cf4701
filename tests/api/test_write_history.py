"""Conflicts become supersession in business time, over gRPC: cat → dog over the days, back-dated facts, supersedes."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import grpc
import pytest
from google.protobuf import timestamp_pb2
from npc_memory.domain.model import Scope
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc

if TYPE_CHECKING:
    Stub = svc_grpc.MemoryServiceAsyncStub
DAY1 = datetime.now(UTC).replace(microsecond=0) - timedelta(days=40)
SLOT = "favorite_animal"


def day(n: int) -> datetime:
    return DAY1 + timedelta(days=n - 1)


def ts(when: datetime) -> timestamp_pb2.Timestamp:
    out = timestamp_pb2.Timestamp()
    out.FromDatetime(when)
    return out


def _scope(scope: Scope) -> pb.Scope:
    return pb.Scope(user_id=scope.user_id, heroine_id=scope.heroine_id)


def _fact(content: str, n: int, **kw: object) -> pb.MemoryInput:
    return pb.MemoryInput(speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, content=content, valid_at=ts(day(n)),
                          content_type=pb.CONTENT_TYPE_PREFERENCE, **kw)  # type: ignore[arg-type]


async def _store(stub: Stub, scope: Scope, *facts: pb.MemoryInput) -> list[pb.StoreResult]:
    response = await stub.StoreMemories(svc.StoreMemoriesRequest(scope=_scope(scope), memories=list(facts)))
    return list(response.results)


async def _search(stub: Stub, scope: Scope, as_of: datetime | None = None) -> list[str]:
    request = svc.SearchMemoriesRequest(scope=_scope(scope), query="좋아하는 동물")
    if as_of is not None:
        request.as_of.CopyFrom(ts(as_of))
    return [r.memory.content for r in (await stub.SearchMemories(request)).results]


async def _history(stub: Stub, scope: Scope) -> list[pb.Memory]:
    response = await stub.GetMemoryHistory(svc.GetMemoryHistoryRequest(scope=_scope(scope), subject_id="user",
                                                                       slot=SLOT))
    return list(response.memories)


async def test_seed_003_cat_then_dog_supersedes_in_business_time(stub: Stub, scope: Scope) -> None:
    """Day 1 cat, day 30 dog in the same slot: now only the dog, as of day 15 only the cat, history has both."""
    (cat,) = await _store(stub, scope, _fact("고양이를 좋아함", 1, slot=SLOT))
    (dog,) = await _store(stub, scope, _fact("요즘은 강아지가 더 좋아", 30, slot=SLOT))
    assert cat.outcome == pb.STORE_OUTCOME_CREATED
    assert dog.outcome == pb.STORE_OUTCOME_SUPERSEDED
    assert list(dog.superseded_ids) == [cat.memory_id]
    assert await _search(stub, scope) == ["요즘은 강아지가 더 좋아"]
    assert await _search(stub, scope, as_of=day(15)) == ["고양이를 좋아함"]
    old, new = await _history(stub, scope)
    assert (old.memory_id, new.memory_id) == (cat.memory_id, dog.memory_id)
    assert old.valid_at.ToDatetime(UTC) == day(1)
    assert old.invalid_at.ToDatetime(UTC) == day(30)
    assert old.close_reason == pb.CLOSE_REASON_SUPERSEDED
    assert old.superseded_by == dog.memory_id
    assert new.valid_at.ToDatetime(UTC) == day(30)
    assert not new.HasField("invalid_at")
    assert new.close_reason == pb.CLOSE_REASON_UNSPECIFIED


async def test_back_dated_facts_go_into_the_timeline_without_closing_the_newer_one(stub: Stub, scope: Scope) -> None:
    """Facts valid on day 10 and day -5 arrive after the day-30 dog: both are history, the dog stays valid."""
    (cat,) = await _store(stub, scope, _fact("고양이를 좋아함", 1, slot=SLOT))
    (dog,) = await _store(stub, scope, _fact("강아지를 좋아함", 30, slot=SLOT))
    (hamster,) = await _store(stub, scope, _fact("햄스터를 좋아함", 10, slot=SLOT))
    (rabbit,) = await _store(stub, scope, _fact("토끼를 좋아함", -5, slot=SLOT))
    assert hamster.outcome == pb.STORE_OUTCOME_HISTORICAL
    assert list(hamster.superseded_ids) == [cat.memory_id]
    assert rabbit.outcome == pb.STORE_OUTCOME_HISTORICAL
    assert list(rabbit.superseded_ids) == []
    timeline = await _history(stub, scope)
    assert [m.memory_id for m in timeline] == [rabbit.memory_id, cat.memory_id, hamster.memory_id, dog.memory_id]
    for earlier, later in itertools.pairwise(timeline):
        assert earlier.invalid_at == later.valid_at
        assert earlier.superseded_by == later.memory_id
    assert not timeline[-1].HasField("invalid_at")
    assert await _search(stub, scope) == ["강아지를 좋아함"]
    assert await _search(stub, scope, as_of=day(12)) == ["햄스터를 좋아함"]


async def test_same_slot_twice_in_one_request_leaves_the_later_fact_valid(stub: Stub, scope: Scope) -> None:
    """A batch holding day 1 and day 30 of one slot stores both, the first closed by the second."""
    cat, dog = await _store(
        stub, scope, _fact("고양이를 좋아함", 1, slot=SLOT), _fact("강아지를 좋아함", 30, slot=SLOT)
    )
    assert dog.outcome == pb.STORE_OUTCOME_SUPERSEDED
    assert list(dog.superseded_ids) == [cat.memory_id]
    assert [m.invalid_at.ToDatetime(UTC) if m.HasField("invalid_at") else None for m in await _history(stub, scope)] \
        == [day(30), None]


async def test_explicit_supersedes_closes_the_named_memory(stub: Stub, scope: Scope) -> None:
    """A fact naming an older memory in supersedes closes it at its own valid_at; the chain shows both."""
    (old,) = await _store(stub, scope, _fact("레티아와 싸웠음", 3))
    (new,) = await _store(stub, scope, _fact("레티아와 화해했음", 8, supersedes=[old.memory_id]))
    assert new.outcome == pb.STORE_OUTCOME_SUPERSEDED
    assert list(new.superseded_ids) == [old.memory_id]
    chain = await stub.GetMemoryHistory(svc.GetMemoryHistoryRequest(scope=_scope(scope), memory_id=old.memory_id))
    first, second = chain.memories
    assert (first.memory_id, second.memory_id) == (old.memory_id, new.memory_id)
    assert first.invalid_at.ToDatetime(UTC) == day(8)
    assert first.superseded_by == new.memory_id


@pytest.mark.parametrize(
    ("case", "code"),
    [
        pytest.param("closed", grpc.StatusCode.FAILED_PRECONDITION, id="already-closed"),
        pytest.param("other-scope", grpc.StatusCode.INVALID_ARGUMENT, id="other-heroine"),
        pytest.param("newer", grpc.StatusCode.INVALID_ARGUMENT, id="target-newer-than-fact"),
    ],
)
async def test_bad_supersedes_target_fails_the_whole_request(
    stub: Stub, scope: Scope, case: str, code: grpc.StatusCode
) -> None:
    """A target that is closed, in another scope or newer than the fact fails the call and writes nothing."""
    target_scope = Scope(scope.user_id, "roco") if case == "other-scope" else scope
    (target,) = await _store(stub, target_scope, _fact("루파메스를 처음 만남", 5))
    if case == "closed":
        await stub.InvalidateMemory(svc.InvalidateMemoryRequest(scope=_scope(scope), memory_id=target.memory_id))
    valid_day = 2 if case == "newer" else 9
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await _store(
            stub, scope, _fact("레티아에게 꽃을 선물함", 9),
            _fact("로코와 바다에 감", valid_day, supersedes=[target.memory_id]),
        )
    assert err.value.code() == code
    listed = await stub.ListMemories(svc.ListMemoriesRequest(scope=_scope(scope), include_invalidated=True))
    assert {m.content for m in listed.memories} <= {"루파메스를 처음 만남"}
