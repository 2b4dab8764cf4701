"""Linked memories over gRPC: step-by-step ExpandMemory, links on the way in, hops in search, deepen, scopes."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from typing import TypeAlias

import grpc
import psycopg
import pytest
from google.protobuf import field_mask_pb2
from npc_memory.domain.model import Scope
from npc_memory.domain.retention import RetentionPolicy
from npc_memory.engine import MemoryEngine
from npc_memory.store.retention import retain_scope
from npc_memory_client import AsyncClient, Fact, LinkKind
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc
from test_e2e_grpc import _fact, _scope, _violations

Stub: TypeAlias = "svc_grpc.MemoryServiceAsyncStub"


MEMO = "레티아와 바닷가에서 조개를 주웠다"
CORPUS = [
    "바닷가 모래사장에서 레티아가 맨발로 뛰었다", "조개 껍데기로 목걸이를 만들었다", "바닷가 등대에 불이 켜졌다",
    "등대지기 할아버지가 옛날 이야기를 해 주었다", "할아버지는 젊을 때 선원이었다", "선원들은 폭풍을 두려워한다",
    "폭풍이 오던 밤 마을 축제가 취소되었다", "마을 축제에서 레티아가 춤을 추었다", "레티아는 춤보다 노래를 좋아한다",
    "노래 연습은 매일 아침에 한다", "아침마다 빵집에서 빵을 산다", "빵집 주인은 고양이를 키운다",
    "고양이는 생선을 좋아한다", "생선 시장은 항구 옆에 있다", "항구에는 큰 배가 정박해 있다",
    "큰 배를 타고 여행을 가고 싶다", "여행 가방을 새로 샀다", "가방 안에 일기장을 넣어 두었다",
    "일기장에 바다 그림을 그렸다", "그림 그리기는 레티아의 취미이다",
]


def _ref(memory_id: str = "", batch_index: int | None = None) -> pb.MemoryRef:
    return pb.MemoryRef(batch_index=batch_index) if batch_index is not None else pb.MemoryRef(memory_id=memory_id)


async def _store(stub: Stub, scope: Scope, facts: list[pb.MemoryInput], heroine: str | None = None) -> list[str]:
    resp = await stub.StoreMemories(svc.StoreMemoriesRequest(scope=_scope(scope, heroine), memories=facts))
    return [r.memory_id for r in resp.results]


def _is_id(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True


async def test_seed_000_expand_three_times_goes_one_depth_deeper_each_call(stub: Stub, scope: Scope) -> None:
    """Seed 000: a memo expanded three times goes one depth deeper each call with ≤ 5 new links, none twice.

    Depth and via are recorded, the total is counted, and the last two calls ("더 찾아줘") name no memory. Only
    a shared distinctive keyword links (docs/guide/links.md): the chain's later facts share no word with the
    first ones found, so the deeper calls may find nothing.
    """
    memo, *_ = await _store(stub, scope, [_fact(MEMO), *(_fact(c) for c in CORPUS)])
    first = await stub.ExpandMemory(svc.ExpandMemoryRequest(scope=_scope(scope), memory_id=memo))
    second = await stub.ExpandMemory(svc.ExpandMemoryRequest(scope=_scope(scope)))
    third = await stub.ExpandMemory(svc.ExpandMemoryRequest(scope=_scope(scope)))
    calls = [first, second, third]
    assert [c.depth for c in calls] == [1, 2, 3]
    assert all(c.memory_id == memo for c in calls)
    assert len(first.found) >= 1
    assert all(len(c.found) <= 5 for c in calls)
    linked = [k.to_memory_id for c in calls for k in c.found]
    assert len(linked) == len(set(linked))
    assert memo not in linked
    assert [c.total_linked for c in calls] == [len(first.found), len(first.found) + len(second.found), len(linked)]
    for c in calls:
        assert all(k.depth == c.depth and k.from_memory_id == memo and k.via for k in c.found)
        assert [m.memory_id for m in c.memories] == [k.to_memory_id for k in c.found]
    # Depth 1 goes through the memo's own keywords; deeper ones through a keyword or a memory found before.
    keywords = [k.via for k in first.found]
    assert keywords
    assert all(kw in MEMO and kw != "레티아" for kw in keywords)  # the heroine's name is in 5 of 21: no evidence
    earlier = {memo, *(k.to_memory_id for k in first.found)}
    for k in second.found:
        assert not _is_id(k.via) or k.via in earlier
    links = await stub.ListLinks(svc.ListLinksRequest(scope=_scope(scope), memory_id=memo))
    assert sorted(k.to_memory_id for k in links.related) == sorted(linked)
    assert all(k.kind == pb.LINK_KIND_RELATED_TO for k in links.related)
    assert not links.parents


async def test_concurrent_expands_of_one_memory_never_link_a_memory_twice(stub: Stub, scope: Scope) -> None:
    """Four expands of one memory at once queue on the scope: four distinct depths, no memory linked twice."""
    memo, *_ = await _store(stub, scope, [_fact(MEMO), *(_fact(c) for c in CORPUS)])
    calls = await asyncio.gather(*(
        stub.ExpandMemory(svc.ExpandMemoryRequest(scope=_scope(scope), memory_id=memo)) for _ in range(4)
    ))
    assert sorted(c.depth for c in calls) == [1, 2, 3, 4]
    linked = [k.to_memory_id for c in calls for k in c.found]
    assert len(linked) == len(set(linked))
    assert max(c.total_linked for c in calls) == len(linked)


async def test_a_linked_memory_comes_back_through_hops_and_not_without(stub: Stub, scope: Scope) -> None:
    """A memory reachable only through two `related` links comes back at hops 2 (marked hops: 2), not at 0 or 1.

    It names the memory it was reached through; the limit holds and no memory appears twice.
    """
    fillers = [_fact(f"등대 근처에서 있었던 일 {i}번째: 갈매기를 보았다", importance=9) for i in range(6)]
    ids = await _store(stub, scope, [
        _fact("레티아의 아버지는 등대지기이다", importance=9),
        # No word of the query: with 레티아 it ranked 0.016 below the fourth result without hops (0.336 against
        # 0.352), so a small shift of scores put it among the ranked rows and it was no longer reached by a hop.
        _fact("낡은 나침반을 선물로 받았다", importance=1, related=[_ref(batch_index=0)]),
        _fact("그 물건은 할머니의 유품이었다", importance=1, related=[_ref(batch_index=1)]),
        *fillers,
    ])
    anchor, compass, heirloom = ids[:3]

    async def search(hops: int, as_of: datetime | None = None) -> list[pb.ScoredMemory]:
        request = svc.SearchMemoriesRequest(scope=_scope(scope), query="레티아 아버지 등대지기", limit=4, hops=hops)
        if as_of is not None:
            request.as_of.FromDatetime(as_of)
        resp = await stub.SearchMemories(request)
        assert len(resp.results) <= 4
        found = [r.memory.memory_id for r in resp.results]
        assert len(found) == len(set(found))
        return list(resp.results)

    plain = await search(0)
    assert anchor in [r.memory.memory_id for r in plain]
    assert heirloom not in [r.memory.memory_id for r in plain]
    assert all(r.hops == 0 for r in plain)
    assert heirloom not in [r.memory.memory_id for r in await search(1)]
    two = {r.memory.memory_id: r for r in await search(2)}
    assert two[compass].hops == 1
    assert two[compass].via_memory_id == anchor
    assert two[heirloom].hops == 2
    assert two[heirloom].via_memory_id == compass
    assert two[heirloom].scores.keyword == 0.0
    assert 0 < two[heirloom].scores.final <= 1
    # A closed memory is not followed now, and still is as of a time it was valid.
    before = datetime.now(UTC)
    await stub.InvalidateMemory(svc.InvalidateMemoryRequest(scope=_scope(scope), memory_id=heirloom))
    assert heirloom not in [r.memory.memory_id for r in await search(2)]
    assert heirloom in [r.memory.memory_id for r in await search(2, as_of=before)]


async def test_deepen_answers_from_gists_when_they_suffice_and_reaches_sources_when_not(
    stub: Stub, scope: Scope
) -> None:
    """A deepen search answers from gists when a gist covers the question and reaches sources when only they do."""
    gist, knowledge, source, _ = await _store(stub, scope, [
        _fact("고양이", tier=pb.TIER_GIST),
        _fact("플레이어는 고양이를 좋아한다", tier=pb.TIER_KNOWLEDGE, parents=[_ref(batch_index=2)]),
        _fact("어제 시장에서 노란 고양이를 봤는데 너무 귀여웠어", tier=pb.TIER_SOURCE),
        _fact("비 오는 날에는 창가에 앉아 책을 읽으며 따뜻한 차를 마셔", tier=pb.TIER_SOURCE),
    ])

    async def deepen(query: str) -> svc.SearchMemoriesResponse:
        return await stub.SearchMemories(svc.SearchMemoriesRequest(
            scope=_scope(scope), query=query, limit=1, deepen=True, deepen_min_relevance=THRESHOLD))

    cat = await deepen("고양이")
    assert cat.answered_tier == pb.TIER_GIST
    assert cat.results[0].memory.memory_id == gist
    rain = await deepen("비 오는 날에는 뭐 해?")
    assert rain.answered_tier == pb.TIER_SOURCE
    assert rain.results[0].memory.tier == pb.TIER_SOURCE
    assert rain.results[0].memory.memory_id != source
    links = await stub.ListLinks(svc.ListLinksRequest(scope=_scope(scope), memory_id=source))
    assert [k.from_memory_id for k in links.children] == [knowledge]


THRESHOLD = 0.87
"""The raw e5 cosine a deepen result needs in the test above (the bundled model: same word ~0.9+)."""


async def test_no_link_crosses_a_scope(stub: Stub, scope: Scope, database_url: str) -> None:
    """No link crosses a scope: the API refuses it by field, the schema refuses it outright, expand stays inside.

    Naming another heroine's or player's memory in `related`/`parents` is INVALID_ARGUMENT naming the field and
    writes nothing.
    """
    (theirs,) = await _store(stub, scope, [_fact("레티아에게만 한 비밀 이야기")])
    other_player = Scope(f"other-{uuid.uuid4().hex[:8]}", scope.heroine_id)
    for target, heroine in ((scope, "roco"), (other_player, None)):
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await _store(stub, target, [
                _fact("괜찮은 사실"),
                _fact("연결하려는 사실", related=[_ref(batch_index=0), _ref(theirs)], parents=[_ref(theirs)]),
            ], heroine)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "memories[1].related[1]" in _violations(err.value)
        listed = await stub.ListMemories(svc.ListMemoriesRequest(scope=_scope(target, heroine)))
        assert not listed.memories
    (roco_id,) = await _store(stub, scope, [_fact("레티아에게만 한 비밀 이야기 또 하나")], "roco")
    with psycopg.connect(database_url) as conn, pytest.raises(psycopg.errors.ForeignKeyViolation):
        conn.execute(
            "INSERT INTO memory_links (user_id, heroine_id, from_id, to_id, kind, depth)"
            " VALUES (%s, %s, %s, %s, 'related_to', 0)", (scope.user_id, scope.heroine_id, theirs, roco_id))
    expanded = await stub.ExpandMemory(svc.ExpandMemoryRequest(scope=_scope(scope), memory_id=theirs))
    assert roco_id not in [k.to_memory_id for k in expanded.found]
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.ExpandMemory(svc.ExpandMemoryRequest(scope=_scope(scope, "roco"), memory_id=theirs))
    assert err.value.code() == grpc.StatusCode.NOT_FOUND


async def test_superseding_carries_links_and_forget_player_erases_them(
    stub: Stub, scope: Scope, database_url: str
) -> None:
    """A content edit carries the links to the new version (the old keeps its own); ForgetPlayer erases all links.

    A content edit of a source is FAILED_PRECONDITION.
    """
    base, note = await _store(stub, scope, [
        _fact("레티아는 딸기를 좋아한다"), _fact("딸기 케이크를 같이 먹었다", related=[_ref(batch_index=0)]),
    ])
    edited = await stub.UpdateMemory(svc.UpdateMemoryRequest(
        scope=_scope(scope), memory_id=base, content="레티아는 딸기와 블루베리를 좋아한다",
        update_mask=field_mask_pb2.FieldMask(paths=["content"])))
    new_id = edited.memory.memory_id
    for memory_id in (new_id, base):
        links = await stub.ListLinks(svc.ListLinksRequest(scope=_scope(scope), memory_id=memory_id))
        assert [(k.from_memory_id, k.to_memory_id) for k in links.related] == [(note, memory_id)]
    (source,) = await _store(stub, scope, [_fact("딸기 좋아해? 응 엄청!", tier=pb.TIER_SOURCE)])
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.UpdateMemory(svc.UpdateMemoryRequest(
            scope=_scope(scope), memory_id=source, content="바뀐 원문",
            update_mask=field_mask_pb2.FieldMask(paths=["content"])))
    assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    await stub.ForgetPlayer(svc.ForgetPlayerRequest(user_id=scope.user_id))
    with psycopg.connect(database_url) as conn:
        row = conn.execute("SELECT count(*) FROM memory_links WHERE user_id = %s", (scope.user_id,)).fetchone()
    assert row == (0,)


async def test_python_client_expands_lists_links_and_searches_with_hops(server_port: int, scope: Scope) -> None:
    """The typed async client names batch positions in `related`, expands, lists links and reads hops back."""
    async with AsyncClient(f"127.0.0.1:{server_port}") as memory:
        first, second = await memory.store(scope.user_id, scope.heroine_id, [
            Fact("레티아의 아버지는 등대지기이다"), Fact("낡은 나침반을 선물받았다", importance=1, related=[0]),
        ])
        view = await memory.links(scope.user_id, scope.heroine_id, first.memory_id)
        assert [(k.from_id, k.to_id, k.kind) for k in view.related] == [
            (second.memory_id, first.memory_id, LinkKind.RELATED_TO)]
        step = await memory.expand(scope.user_id, scope.heroine_id, first.memory_id)
        assert (step.depth, step.found, step.total_linked) == (1, [], 0)  # the one other memory is linked already
        hits = await memory.search(scope.user_id, scope.heroine_id, "등대지기", limit=2, hops=1)
        by_id = {h.memory.id: h for h in hits}
        assert second.memory_id in by_id
        assert by_id[second.memory_id].hops == 0 or by_id[second.memory_id].via_memory_id == first.memory_id


async def test_retention_never_retires_a_source_a_valid_memory_is_derived_from(
    stub: Stub, engine: MemoryEngine, scope: Scope
) -> None:
    """Over its limit, a scope retires its least important memory, but not a source that knowledge derives from."""
    source, _, loose = await _store(stub, scope, [
        _fact("오늘 레티아랑 호수에 갔어", tier=pb.TIER_SOURCE, importance=1),
        _fact("플레이어는 레티아와 호수에 갔다", importance=5, parents=[_ref(batch_index=0)]),
        _fact("점심은 김밥이었다", importance=2),
    ])
    retired = await retain_scope(engine.db, scope, RetentionPolicy(max_valid=2), datetime.now(UTC))
    assert retired == [uuid.UUID(loose)]  # the least important one, the source (importance 1), is spared
    got = await stub.GetMemory(svc.GetMemoryRequest(scope=_scope(scope), memory_id=source))
    assert got.memory.close_reason == pb.CLOSE_REASON_UNSPECIFIED


async def test_a_slot_supersede_in_store_carries_the_links_to_the_new_version(stub: Stub, scope: Scope) -> None:
    """A newer fact in the same slot, stored by StoreMemories, gets the links of the version it closes."""
    old, note = await _store(stub, scope, [
        _fact("좋아하는 꽃은 장미", slot="favorite_flower"),
        _fact("장미 꽃다발을 주었다", related=[_ref(batch_index=0)]),
    ])
    (new,) = await _store(stub, scope, [_fact("좋아하는 꽃은 해바라기", slot="favorite_flower")])
    links = await stub.ListLinks(svc.ListLinksRequest(scope=_scope(scope), memory_id=new))
    assert [(k.from_memory_id, k.to_memory_id) for k in links.related] == [(note, new)]
    kept = await stub.ListLinks(svc.ListLinksRequest(scope=_scope(scope), memory_id=old))
    assert [(k.from_memory_id, k.to_memory_id) for k in kept.related] == [(note, old)]


async def test_a_request_id_reused_with_other_links_is_refused(stub: Stub, scope: Scope) -> None:
    """The idempotency fingerprint covers `related`: the same request_id with a different link is INVALID_ARGUMENT."""
    facts = [_fact("첫 번째 사실"), _fact("두 번째 사실", related=[_ref(batch_index=0)])]
    request = svc.StoreMemoriesRequest(scope=_scope(scope), memories=facts, request_id="links-once")
    await stub.StoreMemories(request)
    del request.memories[1].related[:]
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.StoreMemories(request)
    assert "request_id" in _violations(err.value)


async def test_expand_never_links_a_memory_of_an_abandoned_timeline(stub: Stub, scope: Scope) -> None:
    """After a load, ExpandMemory finds neighbours only in the player's live timeline, not the abandoned one."""
    memo, *_ = await _store(stub, scope, [_fact(MEMO), _fact(CORPUS[0])])
    await stub.CreateSavePoint(svc.CreateSavePointRequest(user_id=scope.user_id, save_id="before-the-beach"))
    (abandoned,) = await _store(stub, scope, [_fact("레티아와 바닷가에서 조개를 또 주웠다")])
    await stub.LoadSavePoint(svc.LoadSavePointRequest(user_id=scope.user_id, save_id="before-the-beach"))
    found = await stub.ExpandMemory(svc.ExpandMemoryRequest(scope=_scope(scope), memory_id=memo))
    linked = [k.to_memory_id for k in found.found]
    assert linked
    assert abandoned not in linked


async def test_list_links_hides_a_link_made_on_an_abandoned_timeline(stub: Stub, scope: Scope) -> None:
    """A memory linked after the save point that was loaded is not among the older memory's links any more."""
    (memo,) = await _store(stub, scope, [_fact(MEMO)])
    await stub.CreateSavePoint(svc.CreateSavePointRequest(user_id=scope.user_id, save_id="before-the-link"))
    (later,) = await _store(stub, scope, [_fact("조개로 팔찌를 만들었다", related=[_ref(memo)])])
    before = await stub.ListLinks(svc.ListLinksRequest(scope=_scope(scope), memory_id=memo))
    assert [k.to_memory_id for k in before.related] + [k.from_memory_id for k in before.related] != []
    await stub.LoadSavePoint(svc.LoadSavePointRequest(user_id=scope.user_id, save_id="before-the-link"))
    after = await stub.ListLinks(svc.ListLinksRequest(scope=_scope(scope), memory_id=memo))
    assert later not in {k.to_memory_id for k in after.related} | {k.from_memory_id for k in after.related}
