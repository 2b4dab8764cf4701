"""A lone store reads under its scope's lock while the model makes its vectors; under load it embeds first.

The embedder is the bundled model behind a wrapper that fixes the answer to ``runs_wide`` (the load decision the
engine takes it by), so both orders run here whatever the machine's load. After each model call, and before
handing the vectors back, the wrapper asks PostgreSQL on a connection of its own whether the scope's lock is
free: it is held only when the write transaction's reads went out beside the model. The path is taken on uvloop
only, the loop these tests run on (tests/conftest.py) and ``serve``'s default.
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import Sequence
from typing import Any

import psycopg
import pytest
import uvloop
from npc_memory.domain.errors import UnknownSupersedeTargetError
from npc_memory.domain.model import Scope, StoreOutcome, Vector
from npc_memory.embedding.base import Embedder
from npc_memory.engine import MemoryEngine
from npc_memory.ops.loop import on_uvloop
from prometheus_client import REGISTRY
from test_bad_input_grpc import count_rows
from test_write_store import fact

SCOPE_LOCK_FREE = "SELECT pg_try_advisory_xact_lock(hashtextextended(%s || '/' || %s, 0))"


class LoadSaid:
    """The engine's own embedder, saying whether a call would run wide as the test wants; it notes the lock."""

    def __init__(self, inner: Embedder, wide: bool, database_url: str, scope: Scope) -> None:
        self._inner, self._wide, self._url, self._scope = inner, wide, database_url, scope
        self.lock_free: list[bool] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def runs_wide(self) -> bool:
        """What the test says."""
        return self._wide

    async def embed_passages(self, texts: Sequence[str]) -> list[Vector]:
        """The model's vectors; noted once the call is done, whether another session could take the scope's lock."""
        vectors = await self._inner.embed_passages(texts)
        async with await psycopg.AsyncConnection.connect(self._url, autocommit=True) as conn:
            row = await (await conn.execute(SCOPE_LOCK_FREE, (self._scope.user_id, self._scope.heroine_id))).fetchone()
        assert row is not None
        self.lock_free.append(bool(row[0]))
        return vectors


def said(engine: MemoryEngine, database_url: str, scope: Scope, wide: bool) -> tuple[MemoryEngine, LoadSaid]:
    embedder = LoadSaid(engine.embedder, wide, database_url, scope)
    return dataclasses.replace(engine, embedder=embedder), embedder


def orders() -> tuple[float, float]:
    """The store-order counter's two values (this process's metrics registry)."""
    beside, after = (REGISTRY.get_sample_value("npc_memory_store_order_total", {"order": order}) or 0.0
                     for order in ("beside_model", "after_model"))
    return beside, after


@pytest.mark.parametrize("wide", [True, False])
async def test_the_reads_go_out_beside_the_model_only_for_a_lone_call(
    engine: MemoryEngine, database_url: str, scope: Scope, wide: bool
) -> None:
    eng, embedder = said(engine, database_url, scope, wide)
    before = orders()
    (result,) = await eng.store(scope, [fact("레티아와 바다에 갔다")])
    assert result.outcome is StoreOutcome.CREATED
    assert embedder.lock_free == [not wide]
    assert await count_rows(database_url, scope) == 1
    beside, after = (a - b for a, b in zip(orders(), before, strict=True))
    assert (beside, after) == ((1.0, 0.0) if wide else (0.0, 1.0))


@pytest.mark.parametrize("wide", [True, False])
async def test_both_orders_merge_and_keep_alike(
    engine: MemoryEngine, database_url: str, scope: Scope, wide: bool
) -> None:
    """The same text, a re-telling (same terms and meaning, cosine above the threshold), a different fact."""
    eng, embedder = said(engine, database_url, scope, wide)
    (first,) = await eng.store(scope, [fact("펭귄을 좋아함")])
    (again,) = await eng.store(scope, [fact("펭귄을 좋아함")])
    (retold,) = await eng.store(scope, [fact("펭귄을 좋아한다")])
    (other,) = await eng.store(scope, [fact("펭귄을 조금 좋아함")])
    assert (again.outcome, again.memory_id) == (StoreOutcome.DUPLICATE, first.memory_id)
    assert (retold.outcome, retold.memory_id) == (StoreOutcome.DUPLICATE, first.memory_id)
    assert other.outcome is StoreOutcome.CREATED
    assert await count_rows(database_url, scope) == 2
    assert embedder.lock_free == [not wide] * 4


async def test_a_replay_beside_the_model_answers_the_first_response_and_writes_nothing(
    engine: MemoryEngine, database_url: str, scope: Scope
) -> None:
    eng, embedder = said(engine, database_url, scope, True)
    request_id = uuid.uuid4().hex
    first = await eng.store(scope, [fact("로코가 고양이를 키운다")], request_id)
    again = await eng.store(scope, [fact("로코가 고양이를 키운다")], request_id)
    assert again == first
    assert await count_rows(database_url, scope) == 1
    assert embedder.lock_free[:1] == [False]  # the replay's own model call, if it ended first, is not awaited


async def test_a_failed_batch_beside_the_model_writes_nothing(
    engine: MemoryEngine, database_url: str, scope: Scope
) -> None:
    eng, embedder = said(engine, database_url, scope, True)
    missing = uuid.uuid4()
    with pytest.raises(UnknownSupersedeTargetError):
        await eng.store(scope, [fact("루파메스와 산책했다"), fact("루파메스가 웃었다", supersedes=(missing,))])
    assert await count_rows(database_url, scope) == 0
    assert embedder.lock_free == [False]  # the vectors were awaited under the lock, then everything rolled back


def test_the_path_is_taken_on_uvloop_only() -> None:
    async def ask() -> bool:
        return on_uvloop()

    assert uvloop.run(ask()) is True
    assert asyncio.run(ask()) is False
