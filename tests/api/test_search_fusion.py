"""Fusion over gRPC: keyword-only hits survive the union, RRF on request, all four components and the final score."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from npc_memory.domain.model import Scope
from npc_memory.domain.scoring import RECENCY_DAYS, RRF_K
from npc_memory.engine import MemoryEngine
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc

T0 = datetime(2025, 3, 1, tzinfo=UTC)


def _unit(dim: int, cosine: float) -> list[float]:
    """A unit vector whose cosine with the first axis is ``cosine``."""
    v = np.zeros(dim, dtype=np.float32)
    v[0], v[1] = cosine, math.sqrt(max(0.0, 1.0 - cosine * cosine))
    return [float(x) for x in v]


def _fact(content: str, dim: int, cosine: float, importance: int, days: float) -> pb.MemoryInput:
    m = pb.MemoryInput(speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, content=content, importance=importance,
                       embedding=_unit(dim, cosine))
    m.valid_at.FromDatetime(T0 + timedelta(days=days))
    return m


def _search(scope: Scope, text: str, dim: int, **kw: object) -> svc.SearchMemoriesRequest:
    req = svc.SearchMemoriesRequest(scope=pb.Scope(user_id=scope.user_id, heroine_id=scope.heroine_id), query=text,
                                    query_embedding=_unit(dim, 1.0), **kw)  # type: ignore[arg-type]
    req.now.FromDatetime(T0 + timedelta(days=100))
    return req


@pytest.fixture
async def crowded(stub: svc_grpc.MemoryServiceAsyncStub, engine: MemoryEngine, scope: Scope) -> str:
    """80 memories nearer the query, newer and more important than one old, far, unimportant memory with 머리핀."""
    dim = engine.embedder.dim
    others = [_fact(f"{i}번째 산책에서 본 풍경 이야기", dim, 0.5 + i * 0.005, 5 + i % 5, 50 + i) for i in range(80)]
    target = _fact("여름 축제에서 레티아에게 머리핀을 선물함", dim, -0.5, 1, 0)
    await stub.StoreMemories(svc.StoreMemoriesRequest(
        scope=pb.Scope(user_id=scope.user_id, heroine_id=scope.heroine_id), memories=[*others, target]
    ))
    return target.content


async def test_a_memory_found_only_by_its_keyword_is_in_the_results(
    stub: svc_grpc.MemoryServiceAsyncStub, engine: MemoryEngine, scope: Scope, crowded: str
) -> None:
    """Last by meaning, age and importance (outside the top 50 of each), the 머리핀 memory still comes back."""
    assert engine.search_settings.candidates < 80
    found = await stub.SearchMemories(_search(scope, "머리핀 기억나?", engine.embedder.dim, limit=100))
    hit = next(r for r in found.results if r.memory.content == crowded)
    assert hit.scores.keyword == 1.0
    assert hit.scores.relevance == 0.0  # the least similar candidate after min-max calibration
    assert [r.scores.keyword > 0 for r in found.results].count(True) == 1


async def test_keyword_weight_alone_puts_the_keyword_hit_first(
    stub: svc_grpc.MemoryServiceAsyncStub, engine: MemoryEngine, scope: Scope, crowded: str
) -> None:
    """Per-request weights (keyword only) rank the keyword-only memory first."""
    req = _search(scope, "머리핀", engine.embedder.dim, weights=pb.Weights(keyword=1.0))
    found = await stub.SearchMemories(req)
    assert found.results[0].memory.content == crowded
    assert found.results[0].scores.final == pytest.approx(1.0)


async def test_weighted_final_is_the_design_formula(
    stub: svc_grpc.MemoryServiceAsyncStub, engine: MemoryEngine, scope: Scope, crowded: str
) -> None:
    """Every result carries four components in [0, 1] and final = sum of weight * component, best first."""
    w = pb.Weights(recency=0.1, importance=0.2, relevance=0.3, keyword=0.4)
    found = await stub.SearchMemories(_search(scope, "축제 머리핀", engine.embedder.dim, weights=w, limit=20))
    assert len(found.results) == 20
    finals = [r.scores.final for r in found.results]
    assert finals == sorted(finals, reverse=True)
    for r in found.results:
        s = r.scores
        assert all(0.0 <= x <= 1.0 for x in (s.recency, s.importance, s.relevance, s.keyword))
        assert s.final == pytest.approx(0.1 * s.recency + 0.2 * s.importance + 0.3 * s.relevance + 0.4 * s.keyword)
        assert s.importance == pytest.approx(r.memory.importance / 10)
        age = (T0 + timedelta(days=100) - r.memory.valid_at.ToDatetime(UTC)).total_seconds() / 86400
        assert s.recency == pytest.approx(math.exp(-age / RECENCY_DAYS))


async def test_rrf_is_weighted_reciprocal_rank_of_each_component(
    stub: svc_grpc.MemoryServiceAsyncStub, engine: MemoryEngine, scope: Scope
) -> None:
    """With fusion RRF, final = sum w / (60 + rank) over the components present, scaled so first everywhere is 1."""
    dim = engine.embedder.dim
    facts = [
        _fact("고양이를 좋아함", dim, 0.9, 9, 40),            # first on every side
        _fact("고양이 사료를 샀음", dim, 0.7, 7, 30),
        _fact("강아지를 산책시킴", dim, 0.5, 5, 20),
        _fact("비 오는 날을 싫어함", dim, 0.3, 3, 10),
    ]
    pscope = pb.Scope(user_id=scope.user_id, heroine_id=scope.heroine_id)
    await stub.StoreMemories(svc.StoreMemoriesRequest(scope=pscope, memories=facts))
    w = pb.Weights(recency=0.1, importance=0.2, relevance=0.3, keyword=0.4)
    found = await stub.SearchMemories(_search(scope, "고양이 좋아해", dim, weights=w, fusion=pb.FUSION_METHOD_RRF))
    by_content = {r.memory.content: r.scores for r in found.results}
    assert len(by_content) == 4
    assert found.results[0].memory.content == "고양이를 좋아함"
    assert found.results[0].scores.final == pytest.approx(1.0)
    best = (0.1 + 0.2 + 0.3 + 0.4) / (RRF_K + 1)
    # Ranks on recency, importance and relevance are 1, 2, 3, 4 in order; only the 고양이 rows rank on keyword.
    expected = {
        "고양이 사료를 샀음": (0.1 / (RRF_K + 2) + 0.2 / (RRF_K + 2) + 0.3 / (RRF_K + 2) + 0.4 / (RRF_K + 2)) / best,
        "강아지를 산책시킴": (0.1 / (RRF_K + 3) + 0.2 / (RRF_K + 3) + 0.3 / (RRF_K + 3)) / best,
        "비 오는 날을 싫어함": (0.1 / (RRF_K + 4) + 0.2 / (RRF_K + 4) + 0.3 / (RRF_K + 4)) / best,
    }
    for content, final in expected.items():
        assert by_content[content].final == pytest.approx(final)
        assert by_content[content].final < 1.0
    assert by_content["강아지를 산책시킴"].keyword == 0.0


async def test_rrf_and_weighted_can_disagree(
    stub: svc_grpc.MemoryServiceAsyncStub, engine: MemoryEngine, scope: Scope
) -> None:
    """RRF ignores score gaps: a memory far ahead on meaning wins weighted but ties on rank with a keyword hit."""
    dim = engine.embedder.dim
    pscope = pb.Scope(user_id=scope.user_id, heroine_id=scope.heroine_id)
    await stub.StoreMemories(svc.StoreMemoriesRequest(scope=pscope, memories=[
        _fact("바닷가에서 조개를 주움", dim, 0.95, 5, 50),
        _fact("라면을 좋아함", dim, 0.10, 5, 50),
        _fact("등산을 자주 다님", dim, 0.05, 5, 50),
    ]))
    w = pb.Weights(relevance=0.5, keyword=0.5)
    weighted = await stub.SearchMemories(_search(scope, "라면", dim, weights=w))
    rrf = await stub.SearchMemories(_search(scope, "라면", dim, weights=w, fusion=pb.FUSION_METHOD_RRF))
    assert weighted.results[0].memory.content == "라면을 좋아함"  # 0.5 * 0.056 + 0.5 * 1 beats 0.5 * 1
    rrf_scores = {r.memory.content: r.scores.final for r in rrf.results}
    # RRF: 라면 is rank 2 on meaning and 1 on keyword; 조개 is rank 1 on meaning and absent on keyword.
    assert rrf_scores["라면을 좋아함"] > rrf_scores["바닷가에서 조개를 주움"]
    assert rrf_scores["바닷가에서 조개를 주움"] == pytest.approx((0.5 / (RRF_K + 1)) / (1.0 / (RRF_K + 1)))
