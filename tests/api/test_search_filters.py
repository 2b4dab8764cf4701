"""Search filters, business time (as_of, now, include_invalidated) and per-heroine default weights, over gRPC."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import grpc
import pytest
from npc_memory.config import load_config
from npc_memory.domain.model import Scope
from npc_memory.engine import MemoryEngine
from npc_memory.server import create_server
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc

T0 = datetime(2025, 3, 1, tzinfo=UTC)
FOOD, SHY, WARM, TOWN, MARKET = (
    "떡볶이를 좋아함", "레티아는 수줍음이 많음", "오빠는 따뜻한 사람이에요", "이 마을은 평화롭네",
    "루파메스와 시장에 갔음",
)


def _pscope(scope: Scope) -> pb.Scope:
    return pb.Scope(user_id=scope.user_id, heroine_id=scope.heroine_id)


@pytest.fixture(scope="module")
async def varied(stub: svc_grpc.MemoryServiceAsyncStub) -> Scope:
    """Five memories differing in speaker, subject, subject_id, content type, importance, tier and slot."""
    scope = Scope(user_id=f"filters-{uuid.uuid4().hex[:8]}", heroine_id="letia")
    await stub.StoreMemories(svc.StoreMemoriesRequest(scope=_pscope(scope), memories=[
        pb.MemoryInput(speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, content=FOOD, importance=8,
                       content_type=pb.CONTENT_TYPE_PREFERENCE, slot="favorite_food"),
        pb.MemoryInput(speaker=pb.SPEAKER_HEROINE, subject=pb.SUBJECT_HEROINE, content=SHY, importance=3,
                       content_type=pb.CONTENT_TYPE_TRAIT, tier=pb.TIER_GIST),
        pb.MemoryInput(speaker=pb.SPEAKER_HEROINE, subject=pb.SUBJECT_USER, content=WARM, importance=6,
                       content_type=pb.CONTENT_TYPE_OPINION),
        pb.MemoryInput(speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_WORLD, content=TOWN, importance=2,
                       content_type=pb.CONTENT_TYPE_FACT, tier=pb.TIER_SOURCE),
        pb.MemoryInput(speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_HEROINE, subject_id="lupames", content=MARKET,
                       importance=5, content_type=pb.CONTENT_TYPE_EVENT),
    ]))
    return scope


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        pytest.param(pb.MemoryFilter(), {FOOD, SHY, WARM, TOWN, MARKET}, id="none"),
        pytest.param(pb.MemoryFilter(speakers=[pb.SPEAKER_HEROINE]), {SHY, WARM}, id="speaker"),
        pytest.param(pb.MemoryFilter(subjects=[pb.SUBJECT_WORLD]), {TOWN}, id="subject"),
        pytest.param(pb.MemoryFilter(subjects=[pb.SUBJECT_USER, pb.SUBJECT_WORLD]), {FOOD, WARM, TOWN},
                     id="two-subjects"),
        pytest.param(pb.MemoryFilter(subject_ids=["lupames"]), {MARKET}, id="subject-id-other-heroine"),
        pytest.param(pb.MemoryFilter(subject_ids=["letia"]), {SHY}, id="subject-id-own-heroine"),
        pytest.param(pb.MemoryFilter(content_types=[pb.CONTENT_TYPE_PREFERENCE, pb.CONTENT_TYPE_OPINION]),
                     {FOOD, WARM}, id="content-types"),
        pytest.param(pb.MemoryFilter(min_importance=6), {FOOD, WARM}, id="min-importance"),
        pytest.param(pb.MemoryFilter(tiers=[pb.TIER_GIST, pb.TIER_SOURCE]), {SHY, TOWN}, id="tiers"),
        pytest.param(pb.MemoryFilter(slot="favorite_food"), {FOOD}, id="slot"),
        pytest.param(pb.MemoryFilter(speakers=[pb.SPEAKER_USER], subjects=[pb.SUBJECT_USER]), {FOOD},
                     id="combined"),
        pytest.param(pb.MemoryFilter(min_importance=9), set(), id="nothing-matches"),
    ],
)
@pytest.mark.parametrize("query", ["", "좋아하는 음식"], ids=["no-query", "query"])
async def test_filters_restrict_results_exactly(
    stub: svc_grpc.MemoryServiceAsyncStub, varied: Scope, flt: pb.MemoryFilter, expected: set[str], query: str
) -> None:
    """Each filter returns exactly the memories that match it, with or without a query."""
    found = await stub.SearchMemories(svc.SearchMemoriesRequest(scope=_pscope(varied), query=query, filter=flt,
                                                                limit=100))
    assert {r.memory.content for r in found.results} == expected


def _at(days: float) -> datetime:
    return T0 + timedelta(days=days)


@pytest.fixture
async def changed_mind(stub: svc_grpc.MemoryServiceAsyncStub, scope: Scope) -> Scope:
    """Day 1: likes cats most; day 10 (same slot): likes dogs most now, which closes the day-1 fact."""
    cat = pb.MemoryInput(speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, content="고양이를 제일 좋아함",
                         slot="favorite_animal")
    cat.valid_at.FromDatetime(_at(1))
    dog = pb.MemoryInput(speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, content="이제는 강아지를 제일 좋아함",
                         slot="favorite_animal")
    dog.valid_at.FromDatetime(_at(10))
    await stub.StoreMemories(svc.StoreMemoriesRequest(scope=_pscope(scope), memories=[cat]))
    await stub.StoreMemories(svc.StoreMemoriesRequest(scope=_pscope(scope), memories=[dog]))
    return scope


async def _contents(stub: svc_grpc.MemoryServiceAsyncStub, req: svc.SearchMemoriesRequest) -> set[str]:
    return {r.memory.content for r in (await stub.SearchMemories(req)).results}


@pytest.mark.parametrize(
    ("as_of_day", "expected"),
    [
        pytest.param(None, {"이제는 강아지를 제일 좋아함"}, id="now"),
        pytest.param(5, {"고양이를 제일 좋아함"}, id="day-5"),
        pytest.param(10, {"이제는 강아지를 제일 좋아함"}, id="day-10-boundary"),
        pytest.param(0, set(), id="before-anything"),
    ],
)
async def test_as_of_searches_the_memories_valid_at_that_instant(
    stub: svc_grpc.MemoryServiceAsyncStub, changed_mind: Scope, as_of_day: float | None, expected: set[str]
) -> None:
    """as_of returns what was true then: the superseded cat on day 5, the dog from day 10, nothing before day 1."""
    req = svc.SearchMemoriesRequest(scope=_pscope(changed_mind), query="좋아하는 동물")
    if as_of_day is not None:
        req.as_of.FromDatetime(_at(as_of_day))
    assert await _contents(stub, req) == expected


async def test_include_invalidated_returns_closed_memories_for_audits(
    stub: svc_grpc.MemoryServiceAsyncStub, changed_mind: Scope
) -> None:
    """include_invalidated brings back the superseded fact alongside the current one, marked as closed."""
    req = svc.SearchMemoriesRequest(scope=_pscope(changed_mind), query="좋아하는 동물", include_invalidated=True)
    found = await stub.SearchMemories(req)
    closed = {r.memory.content: r.memory.close_reason for r in found.results}
    assert closed == {"고양이를 제일 좋아함": pb.CLOSE_REASON_SUPERSEDED,
                      "이제는 강아지를 제일 좋아함": pb.CLOSE_REASON_UNSPECIFIED}


@pytest.mark.parametrize(
    ("now_day", "recency"),
    [
        pytest.param(1, 1.0, id="same-day"),
        pytest.param(31, 0.5 ** (30 / 365), id="30-days-later"),
        pytest.param(366, 0.5, id="a-year-later"),
        pytest.param(-5, 1.0, id="clock-before-fact"),
    ],
)
async def test_now_is_the_game_clock_for_recency(
    stub: svc_grpc.MemoryServiceAsyncStub, scope: Scope, now_day: float, recency: float
) -> None:
    """Recency halves every 365 days (default half-life), age from valid_at to the request's `now`, never above 1."""
    fact = pb.MemoryInput(speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, content="바다를 보러 가고 싶어함")
    fact.valid_at.FromDatetime(_at(1))
    await stub.StoreMemories(svc.StoreMemoriesRequest(scope=_pscope(scope), memories=[fact]))
    req = svc.SearchMemoriesRequest(scope=_pscope(scope), query="바다")
    req.now.FromDatetime(_at(now_day))
    req.as_of.FromDatetime(_at(2))  # valid on day 2 whatever the game clock says
    (hit,) = (await stub.SearchMemories(req)).results
    assert hit.scores.recency == pytest.approx(recency)


@pytest.fixture
async def roco_weighted_stub(engine: MemoryEngine, tmp_path: Path) -> AsyncIterator[svc_grpc.MemoryServiceAsyncStub]:
    """A second server whose TOML config gives roco keyword-only default weights."""
    path = tmp_path / "npc-memory.toml"
    path.write_text("[search.heroines.roco]\nrecency = 0.0\nimportance = 0.0\nrelevance = 0.0\nkeyword = 1.0\n")
    loaded = load_config({"config": str(path)}, {})
    configured = replace(engine, search_settings=loaded.search)
    server, port, _ = await create_server(configured, "127.0.0.1:0")
    await server.start()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        yield svc_grpc.MemoryServiceStub(channel)
    await server.stop(0)


@pytest.mark.parametrize(
    ("heroine", "weights"),
    [pytest.param("roco", (0.0, 0.0, 0.0, 1.0), id="configured"), pytest.param("letia", (0.10, 0.15, 0.60, 0.15),
                                                                             id="default")],
)
async def test_heroine_default_weights_come_from_the_config_file(
    roco_weighted_stub: svc_grpc.MemoryServiceAsyncStub, scope: Scope, heroine: str, weights: tuple[float, ...]
) -> None:
    """[search.heroines.roco] sets roco's weights when a request has none; letia keeps the global defaults."""
    pscope = pb.Scope(user_id=scope.user_id, heroine_id=heroine)
    await roco_weighted_stub.StoreMemories(svc.StoreMemoriesRequest(scope=pscope, memories=[
        pb.MemoryInput(speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, content="초밥을 좋아함", importance=9),
        pb.MemoryInput(speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, content="수학 시험을 망침", importance=2),
    ]))
    found = await roco_weighted_stub.SearchMemories(svc.SearchMemoriesRequest(scope=pscope, query="수학"))
    w_rec, w_imp, w_rel, w_kw = weights
    for r in found.results:
        s = r.scores
        assert s.final == pytest.approx(w_rec * s.recency + w_imp * s.importance + w_rel * s.relevance
                                        + w_kw * s.keyword)
    if heroine == "roco":
        assert [r.scores.final for r in found.results] == [1.0, 0.0]
