"""Sharing searches (``include_shared``) ranked from held rows answer as the statement does, and never cross players.

A scope asked with the player's shared rows of other heroines is held apart from its own rows, with those shared
rows, and synced against the version of each of the player's scopes (store/scope_sync.py ``SHARED_SYNC``). Every
comparison runs both paths on the same real database: the statement (store/search.py) and the held rows.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import timedelta

import numpy as np
import psycopg
from npc_memory.domain.model import Fusion, MemoryFilter, Scope, ScoredMemory, Subject, Visibility, Weights
from npc_memory.engine import MemoryEngine
from npc_memory.search.held import ScopeCache
from npc_memory.store.migrate import migrate
from npc_memory.store.scope_sync import SHARED_SYNC
from own_database import separate_database
from psycopg.rows import dict_row
from test_scope_cache import _fact, _held, _query, _same_ranking, _statement, _terms, held_searches

HEROINES = ("letia", "roco", "lupames")
SHARED, PRIVATE = Visibility.SHARED, Visibility.PRIVATE


async def _seed_player(engine: MemoryEngine, user: str, seed: int, sizes: tuple[int, ...] = (200, 120, 90)) -> None:
    """Each heroine's rows of one player; every third row of the other heroines is shared, and some of letia's."""
    rng = np.random.default_rng(seed)
    for n, heroine in zip(sizes, HEROINES, strict=True):
        facts = [_fact(rng, engine.embedder.dim, i) for i in range(n)]
        facts = [replace(f, content=f"{f.content} {heroine}", visibility=SHARED if i % 3 == 0 else PRIVATE)
                 for i, f in enumerate(facts)]
        for start in range(0, n, 64):
            await engine.store(Scope(user, heroine), facts[start:start + 64])


def _allowed(hits: list[ScoredMemory], scope: Scope) -> None:
    """Only the scope's own rows and the same player's shared rows of other heroines."""
    for h in hits:
        assert h.memory.scope.user_id == scope.user_id
        assert h.memory.scope == scope or h.memory.visibility is Visibility.SHARED


async def test_sharing_searches_rank_as_the_statement_does(engine: MemoryEngine) -> None:
    """Over three heroines' rows and varied requests; another player's rows (shared too) never come back."""
    user = f"u-{uuid.uuid4().hex[:8]}"
    await _seed_player(engine, user, seed=40)
    await _seed_player(engine, f"{user}-b", seed=41, sizes=(60, 60, 60))
    scope = Scope(user, "letia")
    cache = ScopeCache(10_000)
    rng = np.random.default_rng(42)
    variants: list[dict[str, object]] = [
        {}, {"fusion": Fusion.RRF}, {"weights": Weights(0.0, 0.0, 0.0, 1.0)}, {"limit": 60},
        {"filter": MemoryFilter(min_importance=7)}, {"as_of": _query(engine, scope, rng).now - timedelta(days=60)},
        {"filter": MemoryFilter(subjects=(Subject.USER,)), "include_invalidated": True},
    ]
    others = 0
    for variant in variants:
        for text in ["좋아해", "고양이 roco", "lupames 바다", ""]:
            query = _query(engine, scope, rng, text=text, include_shared=True, **variant)
            terms = _terms(engine, text) if query.weights.keyword > 0 else []
            held = await _held(cache, engine, query, terms)
            _same_ranking(held, await _statement(engine, query, terms))
            _allowed(held, scope)
            others += sum(h.memory.scope != scope for h in held)
    assert others > 20  # the other heroines' shared rows did rank
    assert cache.rows == 200 + 40 + 30  # letia's rows and the others' shared ones, nothing of the other player


async def test_writes_in_other_scopes_reach_a_sharing_scope(engine: MemoryEngine) -> None:
    """Another heroine's shared store is seen, her private one never; a heroine new to the player is found too."""
    user = f"u-{uuid.uuid4().hex[:8]}"
    await _seed_player(engine, user, seed=43, sizes=(40, 30, 30))
    scope = Scope(user, "letia")
    cache = ScopeCache(10_000)
    rng = np.random.default_rng(44)
    query = _query(engine, scope, rng, text="편지", include_shared=True, limit=30)
    terms = _terms(engine, query.text)
    await _held(cache, engine, query, terms)
    near = replace(_fact(rng, engine.embedder.dim, 5000), content="편지 약속", embedding=query.embedding,
                   importance=10, valid_at=query.now - timedelta(hours=1))
    (private,) = await engine.store(Scope(user, "roco"), [near])
    (shared,) = await engine.store(Scope(user, "mina"), [replace(near, visibility=Visibility.SHARED)])
    after = await _held(cache, engine, query, terms)
    assert after[0].memory.id == shared.memory_id
    assert after[0].memory.scope == Scope(user, "mina")
    assert private.memory_id not in {h.memory.id for h in after}
    _same_ranking(after, await _statement(engine, query, terms))
    # A shared row closed in its own scope is closed here.
    await engine.invalidate(Scope(user, "mina"), shared.memory_id, query.now - timedelta(minutes=1))
    closed = await _held(cache, engine, query, terms)
    assert shared.memory_id not in {h.memory.id for h in closed}
    _same_ranking(closed, await _statement(engine, query, terms))
    assert cache.rows == 40 + 10 + 10 + 1


async def test_a_forgotten_player_is_read_again_elsewhere(engine: MemoryEngine) -> None:
    """Another process holding the sharing scope finds the player's counters gone and reads the scope again."""
    user = f"u-{uuid.uuid4().hex[:8]}"
    await _seed_player(engine, user, seed=45, sizes=(20, 30, 30))
    scope = Scope(user, "letia")
    there = ScopeCache(10_000)
    rng = np.random.default_rng(46)
    query = _query(engine, scope, rng, text="좋아해", include_shared=True, limit=100)
    terms = _terms(engine, query.text)
    assert len(await _held(there, engine, query, terms)) == 20 + 10 + 10
    assert await engine.forget_player(user) == 80
    assert await _held(there, engine, query, terms) == []
    await engine.store(Scope(user, "roco"), [replace(_fact(rng, engine.embedder.dim, 1), visibility=Visibility.SHARED)])
    again = await _held(there, engine, query, terms)
    assert len(again) == 1
    _same_ranking(again, await _statement(engine, query, terms))


async def test_sharing_scopes_are_held_per_player_and_apart(engine: MemoryEngine) -> None:
    """The sharing scope and the own one are held apart; one player's never answers for another's or a saved one."""
    user = f"u-{uuid.uuid4().hex[:8]}"
    await _seed_player(engine, user, seed=47, sizes=(30, 30, 30))
    await _seed_player(engine, f"{user}-b", seed=48, sizes=(30, 30, 30))
    cache = ScopeCache(10_000)
    rng = np.random.default_rng(49)
    for s in [Scope(user, "letia"), Scope(f"{user}-b", "letia"), Scope(user, "roco")] * 2:
        for shared in (True, False):
            query = _query(engine, s, rng, text="좋아해", include_shared=shared, limit=200)
            hits = await _held(cache, engine, query, ["좋아해"])
            assert len(hits) == 30 + 20 * shared
            _allowed(hits, s)
            assert all(h.memory.scope == s for h in hits) or shared
    assert cache.rows == 3 * (30 + 50)
    await engine.create_save_point(user, "slot-1")
    query = _query(engine, Scope(user, "letia"), rng, text="좋아해", include_shared=True)
    assert await cache.search(engine.db, query, ["좋아해"], 50) is None


async def test_a_sharing_search_is_served_from_held_rows(engine: MemoryEngine) -> None:
    """Through the engine: after the first search, sharing searches are answered by the held rows."""
    assert engine.scope_cache is not None
    user = f"u-{uuid.uuid4().hex[:8]}"
    await _seed_player(engine, user, seed=50, sizes=(30, 30, 30))
    scope = Scope(user, "letia")
    query = _query(engine, scope, np.random.default_rng(51), text="", include_shared=True, limit=100)
    first = await engine.search(query)
    await engine.scope_cache.loaded(scope, True)
    before = held_searches()
    again = await engine.search(query)
    assert held_searches() == before + 1
    assert [h.memory.id for h in again] == [h.memory.id for h in first]


def test_scopes_written_before_counters_get_one(database_url: str) -> None:
    """Migration 0014 counts every scope written only before 0013, so a sharing sync finds their shared rows."""
    with separate_database(database_url, "npc_counted") as url:
        migrate(url, target=12)
        with psycopg.connect(url, autocommit=True) as conn:
            for heroine, visibility in [("letia", "private"), ("roco", "shared"), ("roco", "private")]:
                conn.execute(OLD_ROW, {"id": uuid.uuid4(), "heroine": heroine, "visibility": visibility})
        migrate(url, target=13)
        with psycopg.connect(url, autocommit=True) as conn:
            assert conn.execute("SELECT count(*) FROM scope_versions").fetchone() == (0,)
        migrate(url)
        with psycopg.connect(url, autocommit=True) as conn:
            counted = conn.execute("SELECT heroine_id, version FROM scope_versions ORDER BY 1").fetchall()
            assert counted == [("letia", 0), ("roco", 0)]
            params = {"user_id": "player-old", "heroine_id": "letia", "heroines": [], "since": [], "epochs": []}
            cur = psycopg.RawCursor(conn, row_factory=dict_row).execute(SHARED_SYNC.query, SHARED_SYNC.args(params))
            found = {(r["heroine_id"], r["visibility"]) for r in cur.fetchall()}
            assert found == {("letia", "private"), ("roco", "shared")}


OLD_ROW = """
INSERT INTO user_memories (id, user_id, heroine_id, speaker, subject, subject_id, content_type, content,
                           content_key, importance, tier, embedding, embedding_model, valid_at, visibility)
VALUES (%(id)s, 'player-old', %(heroine)s, 'user', 'user', 'user', 'preference', '고양이를 좋아함',
        '고양이를 좋아함', 5, 'knowledge', '[1,0,0]', 'test/3', now() - interval '2 days', %(visibility)s)
"""
