"""The BM25 computed in SQL equals bm25s's Lucene BM25 on the same tokens, over a scope of Korean memories."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import bm25s
import numpy as np
import pytest
from npc_memory.domain.model import ContentType as Ct
from npc_memory.domain.model import MemoryFilter, NewMemory, Scope, SearchQuery, Speaker, Subject, Weights
from npc_memory.domain.scoring import BM25_B, BM25_K1
from npc_memory.engine import MemoryEngine
from npc_memory.store.search_bm25 import UNROLLED_TERMS
from npc_memory.store.search_sql import search_params, search_statement

MEMORIES = [
    ("고양이를 좋아함", Ct.PREFERENCE),
    ("고양이 두 마리를 키움: 초코와 우유", Ct.FACT),
    ("강아지는 조금 무서워함", Ct.PREFERENCE),
    ("매운 음식을 못 먹음", Ct.PREFERENCE),
    ("딸기 케이크를 제일 좋아함", Ct.PREFERENCE),
    ("고향은 바닷가 마을 여수", Ct.PERSONAL),
    ("비 오는 날에는 집에서 책을 읽음", Ct.FACT),
    ("레티아와 처음 만난 곳은 도서관", Ct.EVENT),
    ("고양이 알레르기가 있는 친구가 있음", Ct.FACT),
    ("아침마다 커피를 두 잔 마심", Ct.FACT),
    ("케이크 가게에서 아르바이트를 했음", Ct.PERSONAL),
    ("여름 축제에서 레티아에게 머리핀을 선물함", Ct.EVENT),
    ("수영을 못해서 바다가 무서움", Ct.PERSONAL),
    ("The player said his favourite band is Radiohead", Ct.PREFERENCE),
    ("고양이 고양이 노래를 흥얼거림", Ct.FACT),
]

QUERIES = [
    "고양이 좋아해?",
    "고양이를 키우는 친구",
    "케이크 좋아하는 거 기억나?",
    "바다 수영",
    "레티아랑 어디서 처음 만났지?",
    "radiohead 좋아한다고 했나",
    "우주 비행사",  # no term in the scope: every score is 0
    # more distinct terms than store/search_bm25.UNROLLED_TERMS: the generic (per-term rows) statement
    "고양이 케이크 바다 수영 레티아 도서관 커피 축제 선물 여수 강아지",
]


@pytest.fixture
async def korean_scope(engine: MemoryEngine, scope: Scope) -> Scope:
    """The scope filled with MEMORIES (random unit vectors: only the keyword side is under test here)."""
    rng = np.random.default_rng(7)
    facts = []
    for content, ctype in MEMORIES:
        vec = rng.standard_normal(engine.embedder.dim).astype(np.float32)
        facts.append(NewMemory(
            speaker=Speaker.USER, subject=Subject.USER, subject_id="user", content_type=ctype,
            content=content, embedding=vec / np.linalg.norm(vec),
        ))
    await engine.store(scope, facts)
    return scope


def _query(scope: Scope, text: str, flt: MemoryFilter | None = None) -> SearchQuery:
    flt = flt or MemoryFilter()
    return SearchQuery(scope=scope, text=text, limit=100, weights=Weights(), now=datetime.now(UTC), filter=flt)


async def _sql_bm25(engine: MemoryEngine, query: SearchQuery) -> tuple[dict[str, float], list[str]]:
    """The keyword score the search statement gathers for each candidate (every row: 1,000 per side)."""
    terms = engine.tokenizer.terms(query.text)
    async with engine.db.connection() as conn:
        cur = await conn.execute(search_statement(query, terms, "bm25"), search_params(query, terms, 1000, "bm25"))
        rows = await cur.fetchall()
    return {r["content"]: float(r["keyword_score"]) for r in rows}, terms


def _reference(docs: list[str], engine: MemoryEngine, query_terms: list[str]) -> dict[str, float]:
    """bm25s (method="lucene": idf ln(1 + (N - df + 0.5) / (df + 0.5))) over the same tokens."""
    corpus = [engine.tokenizer.terms(d) for d in docs]
    model = bm25s.BM25(k1=BM25_K1, b=BM25_B, method="lucene", dtype="float64")
    model.index(corpus, show_progress=False)
    known = [t for t in dict.fromkeys(query_terms) if t in model.vocab_dict]
    if not known:
        return dict.fromkeys(docs, 0.0)
    return dict(zip(docs, (float(s) for s in model.get_scores(known)), strict=True))


@pytest.mark.parametrize("text", QUERIES)
async def test_sql_bm25_equals_bm25s_lucene(engine: MemoryEngine, korean_scope: Scope, text: str) -> None:
    """For every memory of the scope, the SQL BM25 equals the reference to 1e-9, zeros included."""
    got, terms = await _sql_bm25(engine, _query(korean_scope, text))
    expected = _reference([c for c, _ in MEMORIES], engine, terms)
    assert set(got) == set(expected)
    for content, score in expected.items():
        assert got[content] == pytest.approx(score, abs=1e-9, rel=1e-9), content


def test_the_long_query_runs_the_generic_form(engine: MemoryEngine) -> None:
    """The last query has more distinct terms than the unrolled statements take (so both forms are compared)."""
    assert len(set(engine.tokenizer.terms(QUERIES[-1]))) > UNROLLED_TERMS


async def test_bm25_statistics_are_taken_over_the_filtered_rows(engine: MemoryEngine, korean_scope: Scope) -> None:
    """With a content_type filter, N, df and avgdl come from the matching rows only, as a reference over them."""
    flt = MemoryFilter(content_types=(Ct.PREFERENCE,))
    got, terms = await _sql_bm25(engine, _query(korean_scope, "고양이 좋아해?", flt))
    docs = [c for c, t in MEMORIES if t is Ct.PREFERENCE]
    expected = _reference(docs, engine, terms)
    assert set(got) == set(docs)
    for content, score in expected.items():
        assert got[content] == pytest.approx(score, abs=1e-9, rel=1e-9), content


async def test_repeated_query_terms_count_once(engine: MemoryEngine, korean_scope: Scope) -> None:
    """Saying 고양이 three times in the query does not triple its weight: query terms are a set."""
    once, _ = await _sql_bm25(engine, _query(korean_scope, "고양이"))
    thrice, _ = await _sql_bm25(engine, _query(korean_scope, "고양이 고양이 고양이"))
    assert once == pytest.approx(thrice)
    assert once["고양이 고양이 노래를 흥얼거림"] > once["고양이를 좋아함"] > 0.0


async def test_keyword_weight_zero_runs_no_keyword_side(engine: MemoryEngine, korean_scope: Scope) -> None:
    """With keyword weight 0 no hit carries a keyword score; the same query with the default weights does."""
    vec = np.random.default_rng(3).standard_normal(engine.embedder.dim).astype(np.float32)
    query = replace(_query(korean_scope, "고양이 좋아해?"), embedding=vec / np.linalg.norm(vec), limit=15)
    no_keyword = Weights(recency=0.2, importance=0.2, relevance=0.6, keyword=0.0)
    plain = await engine.search(replace(query, weights=no_keyword))
    assert plain
    assert all(h.scores.keyword == 0.0 for h in plain)
    assert any(h.scores.keyword > 0.0 for h in await engine.search(query))
