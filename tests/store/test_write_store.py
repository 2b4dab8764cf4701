"""Storing against real PostgreSQL: near-duplicates, atomic batches, idempotent request ids, concurrent writers."""

from __future__ import annotations

import asyncio
import itertools
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import grpc
import psycopg
import pytest
from google.protobuf import timestamp_pb2
from npc_memory.domain.errors import RequestIdReusedError
from npc_memory.domain.model import ContentType, NewMemory, Scope, Speaker, StoreOutcome, Subject
from npc_memory.domain.retention import RetentionPolicies
from npc_memory.engine import MemoryEngine
from npc_memory.store.retention import maintain
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc

if TYPE_CHECKING:
    from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc

    Stub = svc_grpc.MemoryServiceAsyncStub


def _ts(when: datetime) -> timestamp_pb2.Timestamp:
    out = timestamp_pb2.Timestamp()
    out.FromDatetime(when)
    return out


def fact(content: str, **kw: Any) -> NewMemory:
    return NewMemory(Speaker.USER, kw.pop("subject", Subject.USER), kw.pop("subject_id", "user"), ContentType.FACT,
                     content, **kw)


async def rows(database_url: str, scope: Scope) -> list[dict[str, Any]]:
    async with await psycopg.AsyncConnection.connect(database_url, row_factory=psycopg.rows.dict_row) as conn:
        cur = await conn.execute(
            "SELECT id, content, importance, invalid_at, superseded_by, valid_at, slot FROM user_memories"
            " WHERE user_id = %(u)s AND heroine_id = %(h)s ORDER BY valid_at, created_at",
            {"u": scope.user_id, "h": scope.heroine_id},
        )
        return await cur.fetchall()


async def test_paraphrase_is_a_duplicate_and_the_existing_row_keeps_the_higher_importance(
    engine: MemoryEngine, scope: Scope, database_url: str
) -> None:
    """A reworded ending and an exact repeat return the existing id; the row takes the higher importance."""
    (first,) = await engine.store(scope, [fact("고양이를 좋아함", importance=4)])
    (again,) = await engine.store(scope, [fact("고양이를 좋아한다", importance=7)])
    (exact,) = await engine.store(scope, [fact(" 고양이를  좋아함. ", importance=2)])
    assert (again.outcome, again.memory_id) == (StoreOutcome.DUPLICATE, first.memory_id)
    assert (exact.outcome, exact.memory_id) == (StoreOutcome.DUPLICATE, first.memory_id)
    (stored,) = await rows(database_url, scope)
    assert stored["importance"] == 7


@pytest.mark.parametrize(
    "other",
    ["고양이를 싫어함", "고양이를 안 좋아함", "고양이를 좋아하지 않음", "강아지를 좋아함", "고양이 두 마리를 좋아함"],
)
async def test_contradicting_or_different_facts_are_not_duplicates(
    engine: MemoryEngine, scope: Scope, other: str
) -> None:
    """Facts close in cosine but different in meaning are stored as new rows."""
    await engine.store(scope, [fact("고양이를 좋아함")])
    (result,) = await engine.store(scope, [fact(other)])
    assert result.outcome == StoreOutcome.CREATED


async def test_same_text_about_another_subject_is_not_a_duplicate(engine: MemoryEngine, scope: Scope) -> None:
    """The duplicate check stays within the subject: the world fact and the user fact both stay."""
    await engine.store(scope, [fact("비 오는 날을 좋아함")])
    (world,) = await engine.store(scope, [fact("비 오는 날을 좋아함", subject=Subject.WORLD, subject_id="world")])
    assert world.outcome == StoreOutcome.CREATED


async def test_closed_memory_is_not_a_duplicate(engine: MemoryEngine, scope: Scope) -> None:
    """Storing again a fact that was invalidated creates it anew."""
    (first,) = await engine.store(scope, [fact("라면을 좋아함")])
    await engine.invalidate(scope, first.memory_id, None)
    (again,) = await engine.store(scope, [fact("라면을 좋아함")])
    assert again.outcome == StoreOutcome.CREATED
    assert again.memory_id != first.memory_id


async def test_repeats_within_one_batch_are_duplicates_of_the_first(engine: MemoryEngine, scope: Scope) -> None:
    """An exact repeat and a paraphrase later in the same batch return the first fact's id."""
    results = await engine.store(scope, [fact("떡볶이를 좋아함"), fact("떡볶이를 좋아함"), fact("떡볶이를 좋아해")])
    assert [r.outcome for r in results] == [StoreOutcome.CREATED, StoreOutcome.DUPLICATE, StoreOutcome.DUPLICATE]
    assert {r.memory_id for r in results} == {results[0].memory_id}


async def test_batch_over_the_maximum_is_invalid_argument(stub: Stub, scope: Scope, engine: MemoryEngine) -> None:
    """One memory more than the documented maximum is rejected, naming the memories field."""
    over = engine.write_settings.max_batch + 1
    memories = [pb.MemoryInput(speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, content=f"사실 {i}")
                for i in range(over)]
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.StoreMemories(svc.StoreMemoriesRequest(
            scope=pb.Scope(user_id=scope.user_id, heroine_id=scope.heroine_id), memories=memories))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "maximum batch is 256" in (err.value.details() or "")


async def test_database_failure_mid_batch_writes_nothing(engine: MemoryEngine, scope: Scope, database_url: str) -> None:
    """A row the database rejects after others were inserted and a slot closed rolls the whole batch back."""
    (old,) = await engine.store(scope, [fact("고양이를 좋아함", slot="pet")])
    batch = [fact("강아지를 좋아함", slot="pet"), fact("마라탕을 좋아함"), fact("노래를 잘함", importance=11)]
    with pytest.raises(psycopg.errors.CheckViolation):
        await engine.store(scope, batch)  # importance 11 passes no API check here; the table's CHECK refuses it
    (only,) = await rows(database_url, scope)
    assert (only["id"], only["invalid_at"]) == (old.memory_id, None)


async def test_repeated_request_id_returns_the_first_response_without_writing(
    engine: MemoryEngine, scope: Scope, database_url: str
) -> None:
    """The second call with the same request_id answers exactly as the first (CREATED, not DUPLICATE)."""
    first = await engine.store(scope, [fact("초밥을 좋아함"), fact("수영을 못함")], request_id="req-1")
    second = await engine.store(scope, [fact("초밥을 좋아함"), fact("수영을 못함")], request_id="req-1")
    assert second == first
    assert [r.outcome for r in second] == [StoreOutcome.CREATED, StoreOutcome.CREATED]
    assert len(await rows(database_url, scope)) == 2


async def test_racing_identical_requests_write_once(stub: Stub, scope: Scope, database_url: str) -> None:
    """Two identical StoreMemories with one request_id, at once, give the same response and one write."""
    day = datetime(2025, 5, 1, tzinfo=UTC)
    await stub.StoreMemories(svc.StoreMemoriesRequest(
        scope=pb.Scope(user_id=scope.user_id, heroine_id=scope.heroine_id),
        memories=[pb.MemoryInput(speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, content="고양이를 좋아함",
                                 slot="pet", valid_at=_ts(day))],
    ))
    request = svc.StoreMemoriesRequest(
        scope=pb.Scope(user_id=scope.user_id, heroine_id=scope.heroine_id), request_id="race-1",
        memories=[pb.MemoryInput(speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, content="강아지를 좋아함",
                                 slot="pet", valid_at=_ts(day + timedelta(days=1)))],
    )
    a, b = await asyncio.gather(stub.StoreMemories(request), stub.StoreMemories(request))
    assert a == b
    assert a.results[0].outcome == pb.STORE_OUTCOME_SUPERSEDED
    assert len(await rows(database_url, scope)) == 2


async def test_request_id_reused_for_another_request_is_invalid_argument(engine: MemoryEngine, scope: Scope) -> None:
    """A live request_id sent with different facts is refused, naming the key; other scopes are independent."""
    await engine.store(scope, [fact("김밥을 좋아함")], request_id="req-2")
    with pytest.raises(RequestIdReusedError) as err:
        await engine.store(scope, [fact("김밥을 싫어함")], request_id="req-2")
    assert err.value.request_id == "req-2"
    (other,) = await engine.store(Scope(scope.user_id, "roco"), [fact("김밥을 싫어함")], request_id="req-2")
    assert other.outcome == StoreOutcome.CREATED


async def test_expired_request_id_is_pruned_and_free_again(
    engine: MemoryEngine, scope: Scope, database_url: str
) -> None:
    """Past the window a request_id writes again, and maintenance deletes expired keys."""
    await engine.store(scope, [fact("호떡을 좋아함")], request_id="old")
    await engine.store(scope, [fact("냉면을 좋아함")], request_id="older")
    hours = engine.write_settings.idempotency_hours
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        await conn.execute("UPDATE store_requests SET created_at = now() - %(age)s WHERE user_id = %(u)s",
                           {"age": timedelta(hours=hours + 1), "u": scope.user_id})
    (again,) = await engine.store(scope, [fact("호떡을 좋아함")], request_id="old")
    assert again.outcome == StoreOutcome.DUPLICATE  # written (checked) again, not replayed as CREATED
    report = await maintain(engine.db, RetentionPolicies(), hours, datetime.now(UTC))
    assert report.pruned_requests >= 1
    async with await psycopg.AsyncConnection.connect(database_url) as conn:
        cur = await conn.execute("SELECT request_id FROM store_requests WHERE user_id = %(u)s", {"u": scope.user_id})
        assert [r[0] for r in await cur.fetchall()] == ["old"]


async def test_concurrent_conflicting_writers_leave_one_valid_row_and_a_consistent_history(
    stub: Stub, scope: Scope, database_url: str
) -> None:
    """Four writers set the same slot at once: one valid row (the latest valid_at), the rest a clean chain."""
    animals = ["고양이를 좋아함", "강아지를 좋아함", "토끼를 좋아함", "여우를 좋아함"]
    pscope = pb.Scope(user_id=scope.user_id, heroine_id=scope.heroine_id)
    await asyncio.gather(*[
        stub.StoreMemories(svc.StoreMemoriesRequest(scope=pscope, memories=[
            pb.MemoryInput(speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, content=a, slot="pet")]))
        for a in animals
    ])
    timeline = await rows(database_url, scope)
    assert sorted(r["content"] for r in timeline) == sorted(animals)
    assert [r["invalid_at"] is None for r in timeline] == [False, False, False, True]
    for earlier, later in itertools.pairwise(timeline):
        assert (earlier["invalid_at"], earlier["superseded_by"]) == (later["valid_at"], later["id"])
