"""The statement's search (store/search.py) ranks its candidates as tests/score_reference.py does."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
import score_reference
from npc_memory.domain.model import (
    ContentType,
    Fusion,
    NewMemory,
    Scope,
    SearchQuery,
    Speaker,
    Subject,
    Weights,
)
from npc_memory.engine import MemoryEngine
from npc_memory.store import search
from npc_memory.store.search_sql import search_params, search_statement

DAY0 = datetime(2026, 3, 1, tzinfo=UTC)
FACTS = [
    "고양이를 좋아함", "강아지를 무서워함", "매운 라면을 좋아함", "비 오는 날을 싫어함", "생일은 3월 14일",
    "바다가 보이는 마을에서 자람", "커피보다 홍차를 좋아함", "밤하늘의 별을 보는 것을 좋아함",
    "레티아에게 꽃을 선물함", "시험 때문에 요즘 잠을 못 잠", "여동생이 한 명 있음", "수영을 못함",
    "기타를 배우는 중", "딸기 케이크를 제일 좋아함", "마을 축제에 같이 가기로 약속함", "오늘 점심은 김밥을 먹음",
]


async def reference(engine: MemoryEngine, query: SearchQuery, terms: list[str]) -> list[score_reference.Hit]:
    """The statement's candidates, ranked by the independent reference."""
    per_side = engine.search_settings.candidates
    async with engine.db.connection() as conn:
        cur = await conn.execute(search_statement(query, terms, "bm25"), search_params(query, terms, per_side, "bm25"))
        rows = await cur.fetchall()
    return score_reference.rank([score_reference.Row(r["id"], r["valid_at"], r["importance"], float(r["cosine"]),
                                                     float(r["keyword_score"])) for r in rows], query)


QUERIES = ["좋아하는 음식이 뭐야?", "고양이", "생일 언제야", "요즘 어떻게 지내?", "무서워하는 거 있어?", "홍차"]


@pytest.fixture(scope="module")
async def ranked_scope(engine: MemoryEngine) -> Scope:
    """A scope of varied facts: ages from 0 to 60 days, importance with ties, two facts on the same day."""
    scope = Scope("ranking-reference-player", "letia")
    rng = random.Random(7)
    facts = [
        NewMemory(Speaker.USER, Subject.USER, "user", ContentType.FACT, text, importance=rng.choice([3, 5, 5, 8]),
                  valid_at=DAY0 + timedelta(days=rng.choice([0, 3, 3, 20, 45, 60])))
        for text in FACTS
    ]
    await engine.store(scope, facts)
    return scope


@pytest.mark.parametrize("fusion", [Fusion.WEIGHTED, Fusion.RRF], ids=["weighted", "rrf"])
@pytest.mark.parametrize("side", ["both", "no-vector", "no-terms"])
@pytest.mark.parametrize("weights", [Weights(), Weights(0.6, 0.3, 0.1, 0.0)], ids=["default", "recency-heavy"])
async def test_the_statements_ranking_equals_the_reference(
    engine: MemoryEngine, ranked_scope: Scope, fusion: Fusion, side: str, weights: Weights
) -> None:
    """Every query: the same memories in the same order, every component and the final score equal to 1e-9."""
    now = DAY0 + timedelta(days=61)
    for text in QUERIES:
        vector = None if side == "no-vector" else (await engine.embedder.embed_queries([text]))[0]
        terms = [] if side == "no-terms" else engine.tokenizer.terms(text)
        query = SearchQuery(ranked_scope, text, 8, weights, now, fusion=fusion, embedding=vector)
        expected = await reference(engine, query, terms)
        got = await search.search_ranked(engine.db, query, terms, engine.search_settings.candidates, "bm25")
        assert [h.memory.id for h in got] == [e.id for e in expected], text
        for g, e in zip(got, expected, strict=True):
            for part in ("recency", "importance", "relevance", "keyword", "final"):
                assert getattr(g.scores, part) == pytest.approx(getattr(e, part), abs=1e-9), (text, part)


async def test_engine_search_returns_the_sql_ranking(engine: MemoryEngine, ranked_scope: Scope) -> None:
    """The service path is the SQL ranking, limited to the request's limit."""
    query = SearchQuery(ranked_scope, "좋아하는 음식", 3, Weights(), DAY0 + timedelta(days=61))
    hits = await engine.search(query)
    vector = (await engine.embedder.embed_queries([query.text]))[0]
    terms = engine.tokenizer.terms(query.text)
    direct = await search.search_ranked(
        engine.db, replace(query, embedding=vector), terms, engine.search_settings.candidates, "bm25"
    )
    assert len(hits) == 3
    assert [h.memory.id for h in hits] == [h.memory.id for h in direct]
    assert hits[0].scores.final >= hits[1].scores.final >= hits[2].scores.final


EDGES = [datetime(1, 1, 1, tzinfo=UTC), datetime(1900, 6, 1, tzinfo=UTC), datetime(1965, 1, 1, tzinfo=UTC),
         DAY0, datetime(9999, 12, 31, tzinfo=UTC)]


@pytest.fixture(scope="module")
async def calendar_scope(engine: MemoryEngine) -> Scope:
    """Facts dated at both ends of the calendar, 61 years back (near where exp() underflows) and recently."""
    scope = Scope("ranking-calendar-player", "letia")
    await engine.store(scope, [
        NewMemory(Speaker.USER, Subject.USER, "user", ContentType.FACT, text, importance=5, valid_at=at)
        for text, at in zip(FACTS, EDGES, strict=False)
    ])
    return scope


@pytest.mark.parametrize("fusion", [Fusion.WEIGHTED, Fusion.RRF], ids=["weighted", "rrf"])
@pytest.mark.parametrize("now", [DAY0, EDGES[-1], EDGES[0]], ids=["now-2026", "now-9999", "now-year-1"])
async def test_recency_equals_the_reference_across_the_calendar(
    engine: MemoryEngine, calendar_scope: Scope, fusion: Fusion, now: datetime
) -> None:
    """Facts from year 1 to 9999, with or without a vector: statement and reference agree on order and every score."""
    text = QUERIES[0]
    vector = (await engine.embedder.embed_queries([text]))[0]
    for embedding in (vector, None):
        query = SearchQuery(calendar_scope, text, 10, Weights(), now, as_of=EDGES[-1], fusion=fusion,
                            embedding=embedding)
        terms = engine.tokenizer.terms(text)
        expected = await reference(engine, query, terms)
        got = await search.search_ranked(engine.db, query, terms, engine.search_settings.candidates, "bm25")
        assert len(got) == len(EDGES)
        assert [h.memory.id for h in got] == [e.id for e in expected]
        for g, e in zip(got, expected, strict=True):
            for part in ("recency", "importance", "relevance", "keyword", "final"):
                assert getattr(g.scores, part) == pytest.approx(getattr(e, part), abs=1e-9), part
