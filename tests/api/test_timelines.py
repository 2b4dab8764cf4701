"""Game time, save points and timelines over gRPC against the real server and PostgreSQL."""

from __future__ import annotations

import math
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import grpc
import pytest
from google.protobuf import field_mask_pb2, timestamp_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status
from npc_memory.domain.model import Scope
from npc_memory.engine import MemoryEngine
from npc_memory.store.changes import LOCK_SCOPE
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc

if TYPE_CHECKING:
    from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc

    Stub = svc_grpc.MemoryServiceAsyncStub

SECRET = "레티아는 사실 왕국의 공주라는 비밀을 털어놓음"


def _scope(scope: Scope) -> pb.Scope:
    return pb.Scope(user_id=scope.user_id, heroine_id=scope.heroine_id)


def _fact(content: str, day: float, **kw: Any) -> pb.MemoryInput:
    return pb.MemoryInput(speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, content=content,
                          valid_game_day=pb.GameTime(day=day), **kw)


async def _store(stub: Stub, scope: Scope, *facts: pb.MemoryInput) -> list[pb.StoreResult]:
    response = await stub.StoreMemories(svc.StoreMemoriesRequest(scope=_scope(scope), memories=list(facts)))
    return list(response.results)



async def _contents(stub: Stub, scope: Scope, timeline_id: int = 0, **kw: Any) -> set[str]:
    """What a listing of the scope's valid memories shows (live timeline unless ``timeline_id``)."""
    listed = await stub.ListMemories(svc.ListMemoriesRequest(scope=_scope(scope), timeline_id=timeline_id, **kw))
    return {m.content for m in listed.memories}


async def _search(stub: Stub, scope: Scope, query: str, timeline_id: int = 0, **kw: Any) -> list[pb.ScoredMemory]:
    found = await stub.SearchMemories(svc.SearchMemoriesRequest(
        scope=_scope(scope), query=query, timeline_id=timeline_id, **kw))
    return list(found.results)


async def _save(stub: Stub, scope: Scope, save_id: str) -> pb.SavePoint:
    made = await stub.CreateSavePoint(svc.CreateSavePointRequest(user_id=scope.user_id, save_id=save_id))
    return made.save_point


async def _load(stub: Stub, scope: Scope, save_id: str) -> pb.Timeline:
    loaded = await stub.LoadSavePoint(svc.LoadSavePointRequest(user_id=scope.user_id, save_id=save_id))
    return loaded.timeline


def _violations(err: grpc.aio.AioRpcError) -> dict[str, str]:
    status: status_pb2.Status | None = rpc_status.from_call(err)
    assert status is not None
    out: dict[str, str] = {}
    for detail in status.details:
        bad = error_details_pb2.BadRequest()
        assert detail.Unpack(bad)
        out.update({v.field: v.description for v in bad.field_violations})
    return out


async def test_loading_the_day_10_save_forgets_the_day_14_secret(stub: Stub, scope: Scope) -> None:
    """Save on day 10, learn a secret on day 14, load the save: Letia does not know it; the old timeline does."""
    await _store(stub, scope, _fact("나는 고양이를 좋아해", 1, slot="favorite_animal"))
    await _save(stub, scope, "day-10")
    await _store(stub, scope, _fact(SECRET, 14, importance=9))
    assert SECRET in await _contents(stub, scope)
    abandoned = (await stub.ListSavePoints(svc.ListSavePointsRequest(user_id=scope.user_id))).live_timeline_id

    timeline = await _load(stub, scope, "day-10")

    assert timeline.live
    assert timeline.parent_timeline_id == abandoned
    assert await _contents(stub, scope) == {"나는 고양이를 좋아해"}
    hits = await _search(stub, scope, "레티아의 비밀", now_game_day=pb.GameTime(day=15))
    assert SECRET not in {h.memory.content for h in hits}
    assert SECRET in await _contents(stub, scope, timeline_id=abandoned)
    audit = await _search(stub, scope, "레티아의 비밀", timeline_id=abandoned)
    assert audit[0].memory.content == SECRET
    listed = await stub.ListSavePoints(svc.ListSavePointsRequest(user_id=scope.user_id))
    assert listed.live_timeline_id == timeline.timeline_id
    assert [s.save_id for s in listed.save_points] == ["day-10"]


async def test_two_save_slots_alternate(stub: Stub, scope: Scope) -> None:
    """Loading slot A, then B, then A again gives A's memory each time, and B's in between."""
    await _store(stub, scope, _fact("첫 만남은 도서관에서였음", 1))
    await _save(stub, scope, "A")
    await _store(stub, scope, _fact("레티아와 바다에 다녀옴", 5))
    await _save(stub, scope, "B")
    await _load(stub, scope, "A")
    assert await _contents(stub, scope) == {"첫 만남은 도서관에서였음"}
    await _store(stub, scope, _fact("레티아와 산에 다녀옴", 6))
    await _load(stub, scope, "B")
    assert await _contents(stub, scope) == {"첫 만남은 도서관에서였음", "레티아와 바다에 다녀옴"}
    await _load(stub, scope, "A")
    assert await _contents(stub, scope) == {"첫 만남은 도서관에서였음"}


async def test_a_close_after_the_save_stays_out_of_the_loaded_view(stub: Stub, scope: Scope) -> None:
    """A slot superseded after the save is open again after the load; the abandoned view keeps the close."""
    (cats,) = await _store(stub, scope, _fact("나는 고양이를 좋아해", 1, slot="favorite_animal"))
    await _save(stub, scope, "s")
    (dogs,) = await _store(stub, scope, _fact("요즘은 강아지가 더 좋아", 15, slot="favorite_animal"))
    assert dogs.outcome == pb.STORE_OUTCOME_SUPERSEDED
    abandoned = (await stub.ListSavePoints(svc.ListSavePointsRequest(user_id=scope.user_id))).live_timeline_id
    await _load(stub, scope, "s")
    assert await _contents(stub, scope) == {"나는 고양이를 좋아해"}
    got = await stub.GetMemory(svc.GetMemoryRequest(scope=_scope(scope), memory_id=cats.memory_id))
    assert got.memory.close_reason == pb.CLOSE_REASON_UNSPECIFIED
    assert not got.memory.HasField("invalid_at")
    old = await stub.GetMemory(svc.GetMemoryRequest(scope=_scope(scope), memory_id=cats.memory_id,
                                                    timeline_id=abandoned))
    assert old.memory.close_reason == pb.CLOSE_REASON_SUPERSEDED
    assert old.memory.invalid_game_day.day == 15
    # The new timeline can close the inherited row itself; the abandoned view still shows its own close.
    (birds,) = await _store(stub, scope, _fact("새를 키우고 싶어", 20, slot="favorite_animal"))
    assert list(birds.superseded_ids) == [cats.memory_id]
    assert await _contents(stub, scope) == {"새를 키우고 싶어"}
    assert await _contents(stub, scope, timeline_id=abandoned) == {"요즘은 강아지가 더 좋아"}


async def test_an_importance_change_after_the_save_does_not_leak_into_it(stub: Stub, scope: Scope) -> None:
    """UpdateMemory in place after a save is recorded on the live timeline: the loaded save has the old value."""
    (fact,) = await _store(stub, scope, _fact("레티아는 비 오는 날을 좋아함", 2, importance=3))
    await _save(stub, scope, "s")
    await stub.UpdateMemory(svc.UpdateMemoryRequest(
        scope=_scope(scope), memory_id=fact.memory_id, importance=9,
        update_mask=field_mask_pb2.FieldMask(paths=["importance"])))
    abandoned = (await stub.ListSavePoints(svc.ListSavePointsRequest(user_id=scope.user_id))).live_timeline_id
    await _load(stub, scope, "s")
    now = await stub.GetMemory(svc.GetMemoryRequest(scope=_scope(scope), memory_id=fact.memory_id))
    then = await stub.GetMemory(svc.GetMemoryRequest(scope=_scope(scope), memory_id=fact.memory_id,
                                                     timeline_id=abandoned))
    assert (now.memory.importance, then.memory.importance) == (3, 9)


async def test_recency_decays_in_game_days_whatever_the_wall_clock(stub: Stub, scope: Scope) -> None:
    """A day-29 fact stored first (older on the wall clock) ranks above a day-2 fact at game day 30."""
    await _store(stub, scope, _fact("레티아와 시장에 감", 29))
    await _store(stub, scope, _fact("레티아와 공원에 감", 2))
    hits = await _search(stub, scope, "레티아와 어디에 갔지", now_game_day=pb.GameTime(day=30),
                         weights=pb.Weights(recency=1.0))
    assert [h.memory.content for h in hits] == ["레티아와 시장에 감", "레티아와 공원에 감"]
    # The default half-life is 365 game days, so recency is 0.5 ** (age / 365).
    assert hits[0].scores.recency == pytest.approx(0.5 ** (1 / 365))
    assert hits[1].scores.recency == pytest.approx(0.5 ** (28 / 365))
    assert hits[0].memory.valid_game_day.day == pytest.approx(29)


async def test_day_1_day_15_day_30(stub: Stub, scope: Scope) -> None:
    """A fact true from day 1, changed on day 15: asked on day 30 it is the new one, as of day 10 the old one."""
    await _store(stub, scope, _fact("나는 고양이를 좋아해", 1, slot="favorite_animal"))
    await _store(stub, scope, _fact("요즘은 강아지가 더 좋아", 15, slot="favorite_animal"))
    day30 = await _search(stub, scope, "좋아하는 동물", as_of_game_day=pb.GameTime(day=30))
    day10 = await _search(stub, scope, "좋아하는 동물", as_of_game_day=pb.GameTime(day=10))
    assert [h.memory.content for h in day30] == ["요즘은 강아지가 더 좋아"]
    assert [h.memory.content for h in day10] == ["나는 고양이를 좋아해"]
    assert day10[0].memory.invalid_game_day.day == pytest.approx(15)


async def test_known_at_shows_what_the_service_knew(stub: Stub, scope: Scope) -> None:
    """known_at before an invalidation shows the memory valid; before its store, absent."""
    before_store = timestamp_pb2.Timestamp()
    before_store.FromDatetime(datetime.now(UTC))
    (fact,) = await _store(stub, scope, _fact("레티아는 바이올린을 연주함", 3))
    before_close = timestamp_pb2.Timestamp()
    before_close.FromDatetime(datetime.now(UTC))
    await stub.InvalidateMemory(svc.InvalidateMemoryRequest(
        scope=_scope(scope), memory_id=fact.memory_id, invalid_game_day=pb.GameTime(day=4)))
    assert await _contents(stub, scope) == set()
    assert await _contents(stub, scope, known_at=before_close) == {"레티아는 바이올린을 연주함"}
    assert await _contents(stub, scope, known_at=before_store) == set()


async def test_another_players_loads_never_change_this_view(stub: Stub, scope: Scope) -> None:
    """Player B saving, writing and loading leaves player A's memories and timeline as they were."""
    other = Scope(f"player-{uuid.uuid4().hex[:10]}", scope.heroine_id)
    await _store(stub, scope, _fact("A의 기억", 1))
    await _store(stub, other, _fact("B의 기억", 1))
    await _save(stub, other, "s")
    await _store(stub, other, _fact("B의 새 기억", 2))
    await _load(stub, other, "s")
    await _store(stub, scope, _fact("A의 두 번째 기억", 3))
    assert await _contents(stub, scope) == {"A의 기억", "A의 두 번째 기억"}
    mine = await stub.ListSavePoints(svc.ListSavePointsRequest(user_id=scope.user_id))
    assert (mine.live_timeline_id, list(mine.save_points)) == (1, [])
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await _load(stub, scope, "s")
    assert err.value.code() == grpc.StatusCode.NOT_FOUND


async def test_forget_player_erases_every_timeline(stub: Stub, scope: Scope) -> None:
    """ForgetPlayer removes rows of all timelines, save points and timelines."""
    await _store(stub, scope, _fact("첫 기억", 1))
    await _save(stub, scope, "s")
    await _store(stub, scope, _fact("둘째 기억", 2))
    await _load(stub, scope, "s")
    await _store(stub, scope, _fact("셋째 기억", 3))
    forgot = await stub.ForgetPlayer(svc.ForgetPlayerRequest(user_id=scope.user_id))
    assert forgot.deleted_memories == 3
    listed = await stub.ListSavePoints(svc.ListSavePointsRequest(user_id=scope.user_id))
    assert (len(listed.save_points), [t.timeline_id for t in listed.timelines]) == (0, [1])
    assert await _contents(stub, scope, timeline_id=1, include_invalidated=True) == set()


async def test_drop_timeline_erases_an_abandoned_branch_only(stub: Stub, scope: Scope) -> None:
    """The live timeline and its ancestors refuse to drop; an abandoned one goes with its rows and saves."""
    await _store(stub, scope, _fact("첫 기억", 1))
    await _save(stub, scope, "s")
    first = await _load(stub, scope, "s")
    await _store(stub, scope, _fact("버려질 기억", 2))
    await _save(stub, scope, "doomed")
    second = await _load(stub, scope, "s")
    for live_or_ancestor in (1, second.timeline_id):
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.DropTimeline(svc.DropTimelineRequest(user_id=scope.user_id, timeline_id=live_or_ancestor))
        assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    dropped = await stub.DropTimeline(svc.DropTimelineRequest(user_id=scope.user_id, timeline_id=first.timeline_id))
    assert dropped.deleted_memories == 1
    listed = await stub.ListSavePoints(svc.ListSavePointsRequest(user_id=scope.user_id))
    assert [s.save_id for s in listed.save_points] == ["s"]
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await _contents(stub, scope, timeline_id=first.timeline_id)
    assert err.value.code() == grpc.StatusCode.NOT_FOUND
    assert await _contents(stub, scope) == {"첫 기억"}


async def test_game_time_and_timestamp_together_are_refused(stub: Stub, scope: Scope) -> None:
    """valid_at with valid_game_day, or a game day out of range, is INVALID_ARGUMENT naming the field."""
    both = _fact("둘 다", 1, valid_at=timestamp_pb2.Timestamp(seconds=1))
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await _store(stub, scope, both, _fact("너무 먼 날", math.inf))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert set(_violations(err.value)) == {"memories[0].valid_game_day", "memories[1].valid_game_day.day"}
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.CreateSavePoint(svc.CreateSavePointRequest(user_id=scope.user_id, save_id=""))
    assert set(_violations(err.value)) == {"save_id"}
    assert await _contents(stub, scope, include_invalidated=True) == set()


async def test_a_writer_holds_the_player_lock_shared_and_the_scope_lock(engine: MemoryEngine, scope: Scope) -> None:
    """LOCK_SCOPE takes both advisory locks: the player's shared (a save waits for it) and the scope's."""
    async with engine.db.transaction() as conn:
        await conn.execute(LOCK_SCOPE, {"user_id": scope.user_id, "heroine_id": scope.heroine_id})
        cur = await conn.execute(
            "SELECT mode FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() ORDER BY mode"
        )
        modes = [r["mode"] for r in await cur.fetchall()]
    assert modes == ["ExclusiveLock", "ShareLock"]


async def test_links_never_reach_a_memory_of_an_abandoned_timeline(stub: Stub, scope: Scope) -> None:
    """A memory linked after the save is reached by hops on the timeline that wrote it, never after the load."""
    (anchor,) = await _store(stub, scope, _fact("레티아의 아버지는 등대지기이다", 1))
    await _save(stub, scope, "before-the-link")
    (secret,) = await _store(stub, scope, _fact(SECRET, 2, related=[pb.MemoryRef(memory_id=anchor.memory_id)]))
    links = await stub.ListLinks(svc.ListLinksRequest(scope=_scope(scope), memory_id=anchor.memory_id))
    assert secret.memory_id in {link.from_memory_id for link in links.related}
    await stub.LoadSavePoint(svc.LoadSavePointRequest(user_id=scope.user_id, save_id="before-the-link"))
    after = await _search(stub, scope, "등대지기 아버지", limit=4, hops=2)
    assert [r.memory.content for r in after] == ["레티아의 아버지는 등대지기이다"]
