"""Scopes ranked in memory (search/held.py) answer as the search statement does, and stay exact under writes.

Every comparison runs both paths on the same real database: the statement (store/search.py) and the held scope.
Cosines are float32 sums in both, added in a different order, so scores may differ by ~1e-6 and rows whose scores
are that close may swap; ids are compared in order outside such ties, scores to 1e-5.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import numpy.typing as npt
import pytest
from npc_memory.domain.dialogue import distinct_turns
from npc_memory.domain.model import (
    ContentType,
    Fusion,
    MemoryFilter,
    NewMemory,
    ReadView,
    Scope,
    ScoredMemory,
    SearchQuery,
    Speaker,
    Subject,
    Tier,
    Vector,
    Weights,
)
from npc_memory.domain.write_rules import content_key
from npc_memory.embedding.base import normalise
from npc_memory.engine import MemoryEngine
from npc_memory.search.held import ScopeCache
from npc_memory.search.rank import rank
from npc_memory.search.rows import ScopeRows
from npc_memory.store import search
from prometheus_client import REGISTRY
from psycopg.pq import TransactionStatus

T0 = datetime(2026, 1, 1, tzinfo=UTC)
WORDS = ["고양이", "바다", "축제", "머리핀", "좋아해", "비", "산책", "노래", "편지", "약속", "coffee", "rain", "letter"]
TIE = 1e-5


def _vector(rng: np.random.Generator, dim: int) -> Vector:
    return normalise(rng.standard_normal((1, dim)))[0]


def _fact(rng: np.random.Generator, dim: int, i: int) -> NewMemory:
    # Two words in most facts: the common-word case, where most rows share a query term.
    words = ["좋아해"] * (i % 4 != 0) + rng.choice(WORDS, size=3).tolist() + [f"일{i}"]
    # Kinds vary so filters have something to choose; the speaker changes rarely (a batch where it changes between
    # most lines would be stored as a dialogue).
    return NewMemory(speaker=Speaker.HEROINE if i % 7 == 0 else Speaker.USER,
                     subject=Subject.HEROINE if i % 5 == 0 else Subject.USER, subject_id=f"s{i % 3}",
                     content_type=ContentType.PREFERENCE if i % 2 else ContentType.FACT,
                     tier=Tier.GIST if i % 3 == 0 else Tier.KNOWLEDGE, slot=f"slot{i % 4}" if i % 11 == 0 else None,
                     content=" ".join(words), importance=int(rng.integers(1, 11)),
                     valid_at=T0 + timedelta(hours=int(rng.integers(0, 2000))), embedding=_vector(rng, dim))


async def _seed(engine: MemoryEngine, scope: Scope, n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    facts = [_fact(rng, engine.embedder.dim, i) for i in range(n)]
    for start in range(0, n, 64):
        await engine.store(scope, facts[start:start + 64])


def _query(engine: MemoryEngine, scope: Scope, rng: np.random.Generator, **kw: object) -> SearchQuery:
    base = SearchQuery(scope=scope, text="", limit=10, weights=Weights(), now=T0 + timedelta(days=120),
                       embedding=_vector(rng, engine.embedder.dim))
    return replace(base, **kw)  # type: ignore[arg-type]


def _terms(engine: MemoryEngine, text: str) -> list[str]:
    return engine.tokenizer.query_terms(text)


async def _statement(engine: MemoryEngine, query: SearchQuery, terms: list[str]) -> list[ScoredMemory]:
    return await search.search_ranked(engine.db, query, terms, engine.search_settings.candidates, "bm25")


def _same_ranking(held: list[ScoredMemory], stated: list[ScoredMemory]) -> None:
    """Equal hits in order, but for rows whose final scores are within TIE of each other; scores to TIE."""
    assert len(held) == len(stated)
    for a, b in zip(held, stated, strict=True):
        assert a.scores.final == pytest.approx(b.scores.final, abs=TIE)
        if a.memory.id != b.memory.id:  # a near-tie: both rows must be in the other list at the same score
            twin = next(s for s in stated if s.memory.id == a.memory.id)
            assert abs(twin.scores.final - a.scores.final) < TIE
            continue
        assert a.memory == b.memory
        assert a.cosine == pytest.approx(b.cosine, abs=TIE)
        for part in ("recency", "importance", "relevance", "keyword"):
            assert getattr(a.scores, part) == pytest.approx(getattr(b.scores, part), abs=TIE)


def held_searches() -> float:
    """Searches the engines of this process ranked from held rows so far (npc_memory_search_ranked_total)."""
    return REGISTRY.get_sample_value("npc_memory_search_ranked_total", {"path": "held"}) or 0.0


async def _held(cache: ScopeCache, engine: MemoryEngine, query: SearchQuery, terms: list[str]) -> list[ScoredMemory]:
    hits = await cache.search(engine.db, query, terms, engine.search_settings.candidates)
    if hits is None:  # not held yet: read in the background while the statement answers
        await cache.loaded(query.scope, query.include_shared)
        hits = await cache.search(engine.db, query, terms, engine.search_settings.candidates)
    assert hits is not None
    return hits


async def test_held_scopes_rank_as_the_statement_does(engine: MemoryEngine, scope: Scope) -> None:
    """Over 400 rows and varied requests (weights, RRF, keyword only, old states, filters, periods, limits)."""
    await _seed(engine, scope, 400, seed=1)
    cache = ScopeCache(10_000)
    rng = np.random.default_rng(2)
    texts = ["좋아해", "좋아해 바다", "고양이 머리핀 축제", "rain letter coffee", "없는말", ""]
    variants: list[dict[str, object]] = [
        {}, {"fusion": Fusion.RRF}, {"weights": Weights(0.0, 0.0, 0.0, 1.0)}, {"weights": Weights(1.0, 0.0, 0.0, 0.0)},
        {"weights": Weights(0.25, 0.25, 0.25, 0.25), "limit": 50}, {"filter": MemoryFilter(min_importance=7)},
        {"as_of": T0 + timedelta(days=30)}, {"include_invalidated": True}, {"now": T0 - timedelta(days=10)},
        {"recency_days": 3.0, "limit": 100},
        {"filter": MemoryFilter(tiers=(Tier.GIST,))}, {"filter": MemoryFilter(speakers=(Speaker.HEROINE,))},
        {"filter": MemoryFilter(subjects=(Subject.USER,), content_types=(ContentType.FACT,), subject_ids=("s1", "s2"))},
        {"filter": MemoryFilter(slot="slot1"), "include_invalidated": True},
        {"period": (T0 + timedelta(days=20), T0 + timedelta(days=40)), "period_first": True},
        {"period": (T0 + timedelta(days=20), T0 + timedelta(days=40)), "fusion": Fusion.RRF, "limit": 30},
    ]
    compared = 0
    for variant in variants:
        for text in texts:
            query = _query(engine, scope, rng, text=text, **variant)
            terms = _terms(engine, text) if query.weights.keyword > 0 else []
            _same_ranking(await _held(cache, engine, query, terms), await _statement(engine, query, terms))
            compared += 1
    assert compared == len(variants) * len(texts)
    assert cache.rows == 400


async def test_a_held_scope_drops_repeated_lines_as_search_does(engine: MemoryEngine, scope: Scope) -> None:
    """``distinct``: the held hits are the statement's, repeated texts dropped as ``dialogue.distinct_turns`` does.

    The engine asks for twice the hits it answers with when it collapses repeats; the held scope drops them before
    it makes the hits. Lines of the source tier repeat (the duplicate rule merges only knowledge).
    """
    rng = np.random.default_rng(43)
    lines = ["ㅋㅋ 그러게", "좋아해", "ㅋㅋ 그러게!", "바다 가자", "좋아해 ", "응"]
    facts = [replace(_fact(rng, engine.embedder.dim, i), content=lines[i % len(lines)], tier=Tier.SOURCE)
             for i in range(36)]
    await engine.store(scope, facts)
    cache = ScopeCache(10_000)
    for limit in (2, 4, 5):
        for text in ("ㅋㅋ 그러게", "좋아해", ""):
            query = _query(engine, scope, rng, text=text, limit=2 * limit)
            terms = _terms(engine, text)
            stated = await _statement(engine, query, terms)
            assert len({content_key(h.memory.content) for h in stated}) < len(stated)  # repeats to drop
            await _held(cache, engine, query, terms)  # held from here on
            held = await cache.search(engine.db, query, terms, engine.search_settings.candidates, distinct=limit)
            assert held is not None
            _same_ranking(held, distinct_turns(stated, limit))


async def test_writes_are_seen_by_the_next_search(engine: MemoryEngine, scope: Scope) -> None:
    """Stores, importance changes, closes and supersessions reach a held scope, through the changed rows only."""
    await _seed(engine, scope, 120, seed=3)
    cache = ScopeCache(10_000)
    rng = np.random.default_rng(4)
    query = _query(engine, scope, rng, text="좋아해 편지", limit=20)
    terms = _terms(engine, query.text)
    first = await _held(cache, engine, query, terms)
    # A new fact nearest the query, and the first hit closed by a supersession.
    near = replace(_fact(rng, engine.embedder.dim, 1000), content="편지 좋아해", embedding=query.embedding,
                   importance=10, valid_at=query.now, supersedes=(first[0].memory.id,))
    (stored,) = await engine.store(scope, [near])
    await engine.update(scope, first[1].memory.id, importance=1)
    after = await _held(cache, engine, query, terms)
    assert after[0].memory.id == stored.memory_id
    assert first[0].memory.id not in {h.memory.id for h in after}
    _same_ranking(after, await _statement(engine, query, terms))
    assert cache.rows == 121  # the closed row is still held (an old state may ask for it), nothing read twice


async def test_another_process_writes_are_seen(engine: MemoryEngine, scope: Scope) -> None:
    """Two engines (two processes' caches) on one database: each one's writes reach the other's held scope."""
    await _seed(engine, scope, 60, seed=5)
    other = replace(engine, scope_cache=ScopeCache(10_000))
    assert other.scope_cache is not engine.scope_cache
    rng = np.random.default_rng(6)
    query = _query(engine, scope, rng, text="산책")
    await engine.search(query)
    await other.search(query)
    fact = replace(_fact(rng, engine.embedder.dim, 2000), content="산책 약속", embedding=query.embedding,
                   importance=10, valid_at=query.now)
    (stored,) = await other.store(scope, [fact])
    assert (await engine.search(query))[0].memory.id == stored.memory_id
    await engine.update(scope, stored.memory_id, importance=1)
    again = await other.search(query)
    assert next(h for h in again if h.memory.id == stored.memory_id).memory.importance == 1


async def test_deletes_reload_the_scope(engine: MemoryEngine) -> None:
    """A forgotten player's held scope is read again, here and in another process, whatever the new count.

    Even once the player has written more rows than before (the counter starts again, in a new epoch), nothing
    of the old rows comes back.
    """
    scope = Scope(f"u-{uuid.uuid4().hex[:8]}", "letia")
    await _seed(engine, scope, 30, seed=7)
    here, there = ScopeCache(10_000), ScopeCache(10_000)
    rng = np.random.default_rng(8)
    query = _query(engine, scope, rng, text="좋아해", limit=100)
    terms = _terms(engine, query.text)
    assert len(await _held(here, engine, query, terms)) == 30
    assert len(await _held(there, engine, query, terms)) == 30
    assert await engine.forget_player(scope.user_id) == 30
    assert await _held(here, engine, query, terms) == []
    await _seed(engine, scope, 40, seed=9)
    for cache in (here, there):
        again = await _held(cache, engine, query, terms)
        assert len(again) == 40
        _same_ranking(again, await _statement(engine, query, terms))
        assert cache.rows == 40


async def test_a_player_who_saved_is_served_by_the_statement(engine: MemoryEngine, scope: Scope) -> None:
    """After a save the view may differ from the table's rows: the cache declines and the statement answers."""
    await _seed(engine, scope, 20, seed=10)
    cache = ScopeCache(10_000)
    rng = np.random.default_rng(11)
    query = _query(engine, scope, rng, text="좋아해")
    terms = _terms(engine, query.text)
    assert await _held(cache, engine, query, terms) is not None
    await engine.create_save_point(scope.user_id, "slot-1")
    assert await cache.search(engine.db, query, terms, 50) is None
    assert cache.rows == 0
    assert not cache.takes(replace(query, view=ReadView(timeline_id=1)), "bm25")


async def test_a_held_scope_never_answers_for_another(engine: MemoryEngine) -> None:
    """Two heroines of one player and another player's same heroine: each search returns only its scope's rows."""
    user = f"u-{uuid.uuid4().hex[:8]}"
    scopes = [Scope(user, "letia"), Scope(user, "roco"), Scope(f"{user}-b", "letia")]
    for i, s in enumerate(scopes):
        await _seed(engine, s, 40, seed=20 + i)
    cache = ScopeCache(10_000)
    rng = np.random.default_rng(12)
    for s in scopes * 2:
        hits = await _held(cache, engine, _query(engine, s, rng, text="좋아해", limit=100), ["좋아해"])
        assert len(hits) == 40
        assert {h.memory.scope for h in hits} == {s}
    assert cache.rows == 120


async def test_held_rows_stay_under_the_bound(engine: MemoryEngine) -> None:
    """The least recently searched scopes are dropped past max_rows; a scope larger than it is never held."""
    user = f"u-{uuid.uuid4().hex[:8]}"
    scopes = [Scope(user, h) for h in ("a", "b", "c")]
    for i, s in enumerate(scopes):
        await _seed(engine, s, 30, seed=30 + i)
    cache = ScopeCache(70)
    rng = np.random.default_rng(13)
    for s in scopes:
        await _held(cache, engine, _query(engine, s, rng), [])
        assert cache.rows <= 70
    assert cache.rows == 60
    small = ScopeCache(20)
    query = _query(engine, scopes[0], rng)
    assert await small.search(engine.db, query, [], 50) is None
    await small.loaded(query.scope)
    assert await small.search(engine.db, query, [], 50) is None
    assert small.rows == 0


async def test_concurrent_searches_and_stores_end_exact(engine: MemoryEngine, scope: Scope) -> None:
    """Searches racing stores of the same scope on one cache: every answer is whole, and the last one exact."""
    await _seed(engine, scope, 50, seed=40)
    cache = ScopeCache(10_000)
    rng = np.random.default_rng(41)
    pick = random.Random(42)
    query = _query(engine, scope, rng, text="좋아해 노래", limit=100)
    terms = _terms(engine, query.text)

    async def searching() -> None:
        for _ in range(15):
            hits = await cache.search(engine.db, query, terms, 50)
            assert hits is None or len({h.memory.id for h in hits}) == len(hits)

    async def storing() -> None:
        for i in range(10):
            await engine.store(scope, [_fact(rng, engine.embedder.dim, 3000 + i)])
            await asyncio.sleep(pick.random() / 100)

    await asyncio.gather(searching(), searching(), storing())
    _same_ranking(await _held(cache, engine, query, terms), await _statement(engine, query, terms))
    assert cache.rows == 60


async def test_products_worked_out_beside_the_sync_serve_only_unchanged_rows(
    engine: MemoryEngine, scope: Scope
) -> None:
    """A caller's vector: the rows' products made while the sync is out rank only rows the sync left as they were.

    The same request twice around a store: the second sync brings the new row, so the products made beside it (on
    the rows before it) must not be used; and every answer equals a ranking that makes its products afresh.
    """
    await _seed(engine, scope, 80, seed=50)
    cache = ScopeCache(10_000)
    rng = np.random.default_rng(51)
    query = _query(engine, scope, rng, text="좋아해 바다", limit=20)
    terms = _terms(engine, query.text)
    await _held(cache, engine, query, terms)
    rows = await cache.current(engine.db, scope)
    assert rows is not None
    assert query.embedding is not None
    assert rows.product(query.embedding) is rows.product(query.embedding)  # kept for this vector
    fresh = rank(rows.columns(), query, terms, engine.search_settings.candidates)
    assert [(h.memory.id, h.scores, h.cosine) for h in await _held(cache, engine, query, terms)] == [
        (rows.memory(r.row).id, r.scores, r.cosine) for r in fresh]
    near = replace(_fact(rng, engine.embedder.dim, 4000), embedding=query.embedding, importance=10, valid_at=query.now)
    (stored,) = await engine.store(scope, [near])
    after = await _held(cache, engine, query, terms)
    assert after[0].memory.id == stored.memory_id
    assert rows.product(query.embedding).shape == (81,)
    _same_ranking(after, await _statement(engine, query, terms))


async def test_a_callers_vector_is_multiplied_while_the_sync_is_in_the_database(
    engine: MemoryEngine, scope: Scope, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A caller's vector: the held rows' products are made while the sync's statement is out, not after its answer.

    Recorded at each ``ScopeRows.product`` call: whether the kept connection has a command in progress (libpq's
    transaction status ACTIVE). The ranking's own call then reuses the products (one call made them).
    """
    await _seed(engine, scope, 40, seed=52)
    cache = ScopeCache(10_000)
    rng = np.random.default_rng(53)
    await _held(cache, engine, _query(engine, scope, rng), [])
    in_flight: list[bool] = []
    made = ScopeRows.product

    def product(rows: ScopeRows, vector: Vector) -> npt.NDArray[np.float32]:
        kept = engine.db._kept  # the connection the sync went out on
        in_flight.append(kept is not None and kept.info.transaction_status == TransactionStatus.ACTIVE)
        return made(rows, vector)

    monkeypatch.setattr(ScopeRows, "product", product)
    query = _query(engine, scope, rng)  # a vector the rows have not met
    hits = await cache.search(engine.db, query, [], engine.search_settings.candidates)
    assert hits is not None
    assert len(hits) == 10
    assert in_flight == [True, False]
