"""A context block's profile rows taken from a held scope (store/context.py ``held_profile``) are the statement's.

Both paths run on the same real database: the profile statement (``profile_rows``) and the scope's rows held in
memory as a sync left them. The rows vary in everything the profile reads: subject and subject id (this heroine,
another, none), content type (events), importance with many ties, validity (closed by a newer version of a slot,
invalidated, not yet valid), and valid times shared by several rows, so the order's last key, the id, decides.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from npc_memory.domain.context import ContextBlock
from npc_memory.domain.model import ContentType, NewMemory, Scope, Speaker, Subject, Visibility
from npc_memory.embedding.base import normalise
from npc_memory.engine import MemoryEngine
from npc_memory.search.held import ScopeCache
from npc_memory.search.profile import held_profile
from npc_memory.search.rows import ScopeRows
from npc_memory.store import context
from prometheus_client import REGISTRY

T0 = datetime(2026, 3, 1, tzinfo=UTC)
SUBJECTS = [(Subject.USER, ""), (Subject.HEROINE, "letia"), (Subject.HEROINE, "roco"), (Subject.WORLD, "")]
TYPES = [ContentType.FACT, ContentType.EVENT, ContentType.PREFERENCE, ContentType.OPINION]


def _facts(engine: MemoryEngine, n: int) -> list[NewMemory]:
    rng = np.random.default_rng(5)
    vectors = normalise(rng.standard_normal((n, engine.embedder.dim)))
    facts = []
    for i in range(n):
        subject, subject_id = SUBJECTS[i % len(SUBJECTS)]
        facts.append(NewMemory(
            speaker=Speaker.USER, subject=subject, subject_id=subject_id, content_type=TYPES[(i // 4) % len(TYPES)],
            content=f"기억 {i}번: 바다와 고양이", importance=int(rng.integers(4, 8)),
            # Few distinct times, so many rows tie on importance and time and the id orders them.
            valid_at=T0 + timedelta(days=int(rng.integers(0, 12))), slot=f"slot{i % 9}" if i % 5 == 0 else None,
            embedding=vectors[i]))
    return facts


async def _held_rows(cache: ScopeCache, engine: MemoryEngine, scope: Scope) -> ScopeRows:
    rows = await cache.current(engine.db, scope)
    if rows is None:  # not held yet: read in the background
        await cache.loaded(scope)
        rows = await cache.current(engine.db, scope)
    assert rows is not None
    return rows


async def test_held_profile_is_the_statement_profile(engine: MemoryEngine, scope: Scope) -> None:
    """Every time and limit: the same memories in the same order, closed and not-yet-valid rows left out alike."""
    facts = _facts(engine, 240)
    for start in range(0, len(facts), 60):
        await engine.store(scope, facts[start:start + 60])
    stored = await context.profile_rows(engine.db, scope, T0 + timedelta(days=30), False, 1000)
    await engine.invalidate(scope, stored[3].id, T0 + timedelta(days=20))
    cache = ScopeCache(10_000)
    rows = await _held_rows(cache, engine, scope)
    times = [T0 - timedelta(days=1), T0, T0 + timedelta(days=5), T0 + timedelta(days=5, seconds=1),
             T0 + timedelta(days=20), T0 + timedelta(days=40)]
    compared = 0
    for at, limit in itertools.product(times, [1, 7, 50, 200, 1000]):
        stated = await context.profile_rows(engine.db, scope, at, False, limit)
        assert held_profile(rows, scope, at, limit) == stated
        compared += bool(stated)
    assert compared >= 20  # most cases had rows to compare
    everything = await context.profile_rows(engine.db, scope, T0 + timedelta(days=40), False, 1000)
    kinds = {(m.subject, m.subject_id, m.content_type) for m in everything}
    assert (Subject.HEROINE, "roco", ContentType.EVENT) in kinds  # an event about another heroine counts
    assert not any(m.subject is Subject.HEROINE and m.subject_id == "roco" and m.content_type is not ContentType.EVENT
                   for m in everything)
    assert stored[3].id not in {m.id for m in everything}


def _same_block(held: ContextBlock, stated: ContextBlock) -> None:
    """The same block, but for the relevant items' scores: the held ranking's float32 sums differ by ~1e-7."""
    assert (held.text, held.tokens, held.budget, held.left_out) == (stated.text, stated.tokens, stated.budget,
                                                                     stated.left_out)
    assert len(held.sections) == len(stated.sections)
    for a, b in zip(held.sections, stated.sections, strict=True):
        assert (a.section, a.title, a.text, a.tokens) == (b.section, b.title, b.text, b.tokens)
        assert [replace(i, score=0.0) for i in a.items] == [replace(i, score=0.0) for i in b.items]
        assert [i.score for i in a.items] == pytest.approx([i.score for i in b.items], abs=1e-5)


async def test_a_block_of_a_held_scope_is_the_statement_block(engine: MemoryEngine, scope: Scope) -> None:
    """BuildContext with the scope held gives the block the statements give, with and without an utterance."""
    assert engine.scope_cache is not None
    await engine.store(scope, _facts(engine, 80))
    # Rows no block of this scope may show: the same player's with another heroine (private, and shared while the
    # block does not ask for shared ones), and another player's with the same heroine.
    others = [Scope(scope.user_id, "roco"), Scope(f"{scope.user_id}-other", scope.heroine_id)]
    for other in others:
        await engine.store(other, [replace(f, content=f"{f.content} ({other.user_id}/{other.heroine_id})")
                                   for f in _facts(engine, 12)])
    await engine.store(others[0], [replace(f, content=f"공유 {f.content}", visibility=Visibility.SHARED)
                                   for f in _facts(engine, 6)])
    plain = replace(engine, scope_cache=None)
    now = T0 + timedelta(days=8)
    await engine.build_context(scope, "바다", 300, False, "ko", now)  # the first block starts holding the scope
    await engine.scope_cache.loaded(scope)

    def held_blocks() -> float:
        return REGISTRY.get_sample_value("npc_memory_context_profile_total", {"path": "held"}) or 0.0

    before = held_blocks()
    for utterance, budget in [("바다와 고양이", 300), ("", 300), ("고양이", 60), ("없는 말", 2000)]:
        block = await engine.build_context(scope, utterance, budget, False, "ko", now)
        _same_block(block, await plain.build_context(scope, utterance, budget, False, "ko", now))
        assert block.sections
        assert {i.memory.scope for s in block.sections for i in s.items} == {scope}
    assert held_blocks() == before + 4
    # With the player's shared rows of other heroines the scope is held apart, with them (store/scope_sync.py): the
    # first such block is the statements', which starts holding it; the next ones come from the held rows.
    await engine.build_context(scope, "바다", 2000, True, "ko", now)
    await engine.scope_cache.loaded(scope, True)
    for utterance in ("바다", ""):
        shared = await engine.build_context(scope, utterance, 2000, True, "ko", now)
        _same_block(shared, await plain.build_context(scope, utterance, 2000, True, "ko", now))
        seen = {(i.memory.scope, i.memory.visibility) for s in shared.sections for i in s.items}
        assert seen == {(scope, Visibility.PRIVATE), (others[0], Visibility.SHARED)}
        assert any(i.shared for s in shared.sections for i in s.items)
    assert held_blocks() == before + 6
