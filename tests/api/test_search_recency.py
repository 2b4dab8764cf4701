"""Recency is defined for every time the API accepts (years 1 to 9999), over gRPC, with text and with a vector.

A fact more than ~61 years older than the request's `now` once made PostgreSQL's exp() fail with "value out of
range: underflow", and every search of its scope answered INTERNAL.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from npc_memory.engine import MemoryEngine
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc

YEAR_1 = datetime(1, 1, 1, tzinfo=UTC)
YEAR_1900 = datetime(1900, 1, 1, tzinfo=UTC)
RECENT = datetime(2026, 2, 1, tzinfo=UTC)
YEAR_9999 = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)
NOW = datetime(2026, 3, 1, tzinfo=UTC)

FACTS = {  # valid_at -> content, distinct enough that none is stored as a duplicate of another
    YEAR_1: "고양이를 좋아함",
    YEAR_1900: "할아버지가 바닷가 마을에서 태어남",
    RECENT: "어제 딸기 케이크를 먹음",
    YEAR_9999: "먼 미래에 우주 여행을 가기로 약속함",
}


@pytest.fixture(scope="module")
async def ages(stub: svc_grpc.MemoryServiceAsyncStub) -> pb.Scope:
    """A scope holding one fact dated year 1, one 1900, one last month and one at the end of year 9999."""
    scope = pb.Scope(user_id=f"recency-{uuid.uuid4().hex[:8]}", heroine_id="letia")
    facts = []
    for valid_at, content in FACTS.items():
        fact = pb.MemoryInput(speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, content=content)
        fact.valid_at.FromDatetime(valid_at)
        facts.append(fact)
    stored = await stub.StoreMemories(svc.StoreMemoriesRequest(scope=scope, memories=facts))
    assert [r.outcome for r in stored.results] == [pb.STORE_OUTCOME_CREATED] * len(FACTS)
    return scope


def _request(scope: pb.Scope, now: datetime, side: str, vector: list[float]) -> svc.SearchMemoriesRequest:
    """Recency-only weights, every fact valid (as_of at the end of 9999), by text or by caller vector."""
    req = svc.SearchMemoriesRequest(scope=scope, weights=pb.Weights(recency=1.0))
    req.now.FromDatetime(now)
    req.as_of.FromDatetime(YEAR_9999)
    if side == "text":
        req.query = "고양이 좋아해?"
    else:
        req.query_embedding.extend(vector)
    return req


@pytest.fixture(scope="module")
async def query_vector(engine: MemoryEngine) -> list[float]:
    """A real query vector for the vector-only searches."""
    (vector,) = await engine.embedder.embed_queries(["고양이 좋아해?"])
    return [float(x) for x in vector]


@pytest.mark.parametrize("side", ["text", "vector"])
async def test_facts_centuries_old_rank_last_with_recency_near_zero(
    stub: svc_grpc.MemoryServiceAsyncStub, ages: pb.Scope, query_vector: list[float], side: str
) -> None:
    """The search answers; by recency alone: the future fact (1), last month, then 1900 and year 1 (both ~0)."""
    found = await stub.SearchMemories(_request(ages, NOW, side, query_vector))
    contents = [r.memory.content for r in found.results]
    assert contents == [FACTS[YEAR_9999], FACTS[RECENT], FACTS[YEAR_1900], FACTS[YEAR_1]]
    recency = [r.scores.recency for r in found.results]
    assert recency[0] == 1.0
    assert recency[1] == pytest.approx(0.5 ** (28 / 365), abs=1e-3)  # 28 days old, half-life 365 days: ~0.948
    assert 0.0 <= recency[3] <= recency[2] < 1e-30  # 125 years: 0.5 ** 125 ~ 2e-38


@pytest.mark.parametrize("now", [YEAR_9999, YEAR_1], ids=["now-9999", "now-year-1"])
async def test_the_clock_at_either_end_of_the_calendar(
    stub: svc_grpc.MemoryServiceAsyncStub, ages: pb.Scope, query_vector: list[float], now: datetime
) -> None:
    """`now` in year 9999 (the year-1 fact ~10,000 years old) or in year 1 (every fact in the future) answers.

    Newest first either way: in 9999 by recency, in year 1 every recency is 1 and the tie goes to the newer fact.
    """
    for side in ("text", "vector"):
        found = await stub.SearchMemories(_request(ages, now, side, query_vector))
        assert [r.memory.content for r in found.results] == [FACTS[d] for d in (YEAR_9999, RECENT, YEAR_1900, YEAR_1)]
        recency = {r.memory.content: r.scores.recency for r in found.results}
        if now == YEAR_1:
            assert set(recency.values()) == {1.0}, side
        else:
            assert recency[FACTS[YEAR_9999]] == 1.0, side
            assert recency[FACTS[YEAR_1]] < 1e-300, side
