"""A saved player's scope ranked from held rows answers as the statement does, through the timeline view.

Once a player has saved, closes and edits are change entries (store/changes.py), and a load branches the player's
live timeline: the rows a search sees are the view's, not the table's. Such a scope is held as the view shows it
and synced against its version, which counts rows and change entries alike (migration 0016), and the player's live
timeline (store/scope_sync.py ``VIEW_SYNC``). Every comparison runs both paths on the same real database.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import timedelta

import numpy as np
from npc_memory.domain.model import ReadView, Scope, ScoredMemory, Visibility
from npc_memory.engine import MemoryEngine
from npc_memory.search.held import ScopeCache
from prometheus_client import REGISTRY
from test_held_profile import _same_block
from test_scope_cache import _fact, _held, _query, _same_ranking, _seed, _statement, _terms, held_searches


async def _compare(cache: ScopeCache, engine: MemoryEngine, scope: Scope, rng: np.random.Generator,
                   texts: tuple[str, ...] = ("좋아해", "편지 약속", "")) -> None:
    for text in texts:
        for kw in ({}, {"include_invalidated": True}, {"limit": 60}):
            query = _query(engine, scope, rng, text=text, **kw)
            terms = _terms(engine, text)
            _same_ranking(await _held(cache, engine, query, terms), await _statement(engine, query, terms))


async def test_a_saved_player_is_held_through_the_view(engine: MemoryEngine) -> None:
    """Closes, edits and stores after a save reach the held scope; the held rows are the view's, not the table's."""
    scope = Scope(f"u-{uuid.uuid4().hex[:8]}", "letia")
    await _seed(engine, scope, 150, seed=60)
    await engine.create_save_point(scope.user_id, "slot-1")
    cache = ScopeCache(10_000)
    rng = np.random.default_rng(61)
    await _compare(cache, engine, scope, rng)
    query = _query(engine, scope, rng, text="편지", limit=150)
    terms = _terms(engine, query.text)
    first = await _held(cache, engine, query, terms)
    # After the save every change is an entry: the table's rows stay as they were.
    near = replace(_fact(rng, engine.embedder.dim, 3000), content="편지 좋아해", embedding=query.embedding,
                   importance=10, valid_at=query.now - timedelta(hours=1), supersedes=(first[0].memory.id,))
    (stored,) = await engine.store(scope, [near])
    await engine.update(scope, first[1].memory.id, importance=1)
    await engine.invalidate(scope, first[2].memory.id, query.now - timedelta(hours=2))
    after = await _held(cache, engine, query, terms)
    assert after[0].memory.id == stored.memory_id
    gone = {first[0].memory.id, first[2].memory.id}
    assert not gone & {h.memory.id for h in after}
    assert next(h for h in after if h.memory.id == first[1].memory.id).memory.importance == 1
    _same_ranking(after, await _statement(engine, query, terms))
    await _compare(cache, engine, scope, rng)
    assert cache.rows == 151


async def test_a_load_and_a_drop_are_followed(engine: MemoryEngine) -> None:
    """A load branches the live timeline (rows after the save leave the view); a dropped timeline reloads it."""
    scope = Scope(f"u-{uuid.uuid4().hex[:8]}", "letia")
    await _seed(engine, scope, 80, seed=62)
    await engine.create_save_point(scope.user_id, "slot-1")
    here, there = ScopeCache(10_000), ScopeCache(10_000)
    rng = np.random.default_rng(63)
    await _compare(here, engine, scope, rng)
    await _seed(engine, scope, 20, seed=64)  # after the save: on the timeline the load leaves
    await _compare(there, engine, scope, rng)
    assert there.rows == 100
    branched = await engine.load_save_point(scope.user_id, "slot-1")
    for cache in (here, there):
        await _compare(cache, engine, scope, rng)
        assert cache.rows == 80
    await _seed(engine, scope, 10, seed=65)  # on the new timeline
    await engine.create_save_point(scope.user_id, "slot-2")
    await engine.load_save_point(scope.user_id, "slot-1")
    await engine.drop_timeline(scope.user_id, branched.timeline_id)
    for cache in (here, there):
        await _compare(cache, engine, scope, rng)
        assert cache.rows == 80
    query = _query(engine, scope, rng, text="좋아해")
    assert not here.takes(replace(query, view=ReadView(timeline_id=1)), "bm25")  # a past view: the statement


async def test_saved_players_are_held_per_player(engine: MemoryEngine) -> None:
    """Two saved players with the same heroine and one who never saved: each search returns only its scope's rows."""
    user = f"u-{uuid.uuid4().hex[:8]}"
    scopes = [Scope(user, "letia"), Scope(f"{user}-b", "letia"), Scope(f"{user}-c", "letia")]
    for i, s in enumerate(scopes):
        await _seed(engine, s, 30 + 10 * i, seed=66 + i)
    for s in scopes[:2]:
        await engine.create_save_point(s.user_id, "slot-1")
    cache = ScopeCache(10_000)
    rng = np.random.default_rng(69)
    for s in scopes * 2:
        hits = await _held(cache, engine, _query(engine, s, rng, text="좋아해", limit=100), ["좋아해"])
        assert {h.memory.scope for h in hits} == {s}
        assert len(hits) == 30 + 10 * scopes.index(s)
    assert cache.rows == 30 + 40 + 50


async def test_a_saved_players_search_is_served_from_held_rows(engine: MemoryEngine) -> None:
    """Through the engine: after the first search, a saved player's searches are answered by the held rows."""
    assert engine.scope_cache is not None
    scope = Scope(f"u-{uuid.uuid4().hex[:8]}", "letia")
    await _seed(engine, scope, 40, seed=70)
    await engine.create_save_point(scope.user_id, "slot-1")
    query = _query(engine, scope, np.random.default_rng(71), text="", limit=100)
    first = await engine.search(query)
    await engine.scope_cache.loaded(scope)
    before = held_searches()
    again = await engine.search(query)
    assert held_searches() == before + 1
    assert [h.memory.id for h in again] == [h.memory.id for h in first]
    # A heroine's block takes its profile from the same held rows, as the view shows them.
    await engine.update(scope, first[0].memory.id, importance=10)
    now = query.now
    plain = replace(engine, scope_cache=None)

    def held_blocks() -> float:
        return REGISTRY.get_sample_value("npc_memory_context_profile_total", {"path": "held"}) or 0.0

    blocks = held_blocks()
    for utterance in ("좋아해", ""):
        block = await engine.build_context(scope, utterance, 400, False, "ko", now)
        _same_block(block, await plain.build_context(scope, utterance, 400, False, "ko", now))
        assert any(i.memory.id == first[0].memory.id and i.memory.importance == 10
                   for s in block.sections for i in s.items)
    assert held_blocks() == blocks + 2  # the plain engine's blocks are the statement's


async def test_a_saved_players_sharing_scope_is_held_through_the_view(engine: MemoryEngine) -> None:
    """Another heroine's shared rows closed or added after a save, and a load, reach the held sharing scope."""
    user = f"u-{uuid.uuid4().hex[:8]}"
    scope, roco = Scope(user, "letia"), Scope(user, "roco")
    await _seed(engine, scope, 60, seed=72)
    rng = np.random.default_rng(73)
    shared = [replace(_fact(rng, engine.embedder.dim, i), visibility=Visibility.SHARED) for i in range(20)]
    stored = await engine.store(roco, shared)
    await engine.store(roco, [_fact(rng, engine.embedder.dim, 100 + i) for i in range(20)])  # private: never seen
    await _seed(engine, Scope(f"{user}-b", "roco"), 10, seed=74)
    await engine.create_save_point(user, "slot-1")
    cache = ScopeCache(10_000)

    async def compare() -> list[ScoredMemory]:
        last: list[ScoredMemory] = []
        for text in ("좋아해", ""):
            query = _query(engine, scope, rng, text=text, include_shared=True, limit=100)
            terms = _terms(engine, text)
            last = await _held(cache, engine, query, terms)
            _same_ranking(last, await _statement(engine, query, terms))
            assert all(h.memory.scope == scope or h.memory.visibility is Visibility.SHARED for h in last)
            assert {h.memory.scope.user_id for h in last} == {user}
        return last

    await compare()
    assert cache.rows == 80
    # After the save: a shared row of roco's closed (a change entry), a new one stored, a private one stored.
    await engine.invalidate(roco, stored[0].memory_id, _query(engine, scope, rng).now - timedelta(days=1))
    (new,) = await engine.store(roco, [replace(_fact(rng, engine.embedder.dim, 500), visibility=Visibility.SHARED)])
    await engine.store(roco, [_fact(rng, engine.embedder.dim, 501)])
    hits = {h.memory.id for h in await compare()}
    assert new.memory_id in hits
    assert stored[0].memory_id not in hits
    assert cache.rows == 81
    await engine.load_save_point(user, "slot-1")  # the new rows leave the view; the close too
    hits = {h.memory.id for h in await compare()}
    assert new.memory_id not in hits
    assert stored[0].memory_id in hits
    assert cache.rows == 80
