"""A store whose model call leaves a core idle sends its transaction's lock and reads beside the call.

The engine's own embedder (the bundled model) is wrapped to say whether its next call spares a core, so each path
is taken on purpose; the model still embeds every text, and the real function the engine calls is only watched.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from dataclasses import replace
from typing import Any
from uuid import UUID, uuid4

import psycopg
import pytest
from npc_memory.domain.errors import RequestIdReusedError, UnknownSupersedeTargetError
from npc_memory.domain.model import ContentType, NewMemory, Scope, Speaker, StoreOutcome, Subject, Vector
from npc_memory.embedding.base import Embedder
from npc_memory.engine import MemoryEngine
from npc_memory.store import writes


class _Spare:
    """The real embedder, saying whether a call made now would run alone and leave a core idle."""

    def __init__(self, inner: Embedder, spare: bool) -> None:
        self._inner = inner
        self._spare = spare

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def spares_a_core(self) -> bool:
        """As told."""
        return self._spare


@pytest.fixture
def paths(engine: MemoryEngine, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[bool, MemoryEngine], list[bool]]:
    """The engine with its calls sparing a core and not, and which transactions were sent beside the model."""
    beside: list[bool] = []
    real = writes.store_memories

    async def watched(*args: Any, **kwargs: Any) -> Any:
        beside.append((len(args) > 8 and args[8] is not None) or kwargs.get("vectors") is not None)
        return await real(*args, **kwargs)

    monkeypatch.setattr(writes, "store_memories", watched)
    return {w: replace(engine, embedder=_Spare(engine.embedder, w)) for w in (True, False)}, beside


def fact(content: str, **kw: Any) -> NewMemory:
    return NewMemory(Speaker.USER, Subject.USER, "user", ContentType.PREFERENCE, content, **kw)


async def rows(database_url: str, scope: Scope) -> list[dict[str, Any]]:
    async with await psycopg.AsyncConnection.connect(database_url, row_factory=psycopg.rows.dict_row) as conn:
        cur = await conn.execute(
            "SELECT id, content, importance, invalid_at IS NULL AS valid, superseded_by, embedding::text AS vector"
            " FROM user_memories WHERE user_id = %(u)s AND heroine_id = %(h)s ORDER BY created_at, id",
            {"u": scope.user_id, "h": scope.heroine_id},
        )
        return await cur.fetchall()


STEPS = (
    fact("고양이를 좋아함", importance=4),
    fact("고양이를 좋아한다", importance=7),      # same terms and meaning, close: a duplicate by meaning
    fact(" 고양이를  좋아함. ", importance=2),    # the same text
    fact("고양이를 싫어함"),                       # other terms: a new fact
    fact("파란색을 좋아함", slot="favorite_color"),
    fact("빨간색을 좋아함", slot="favorite_color"),  # supersedes the blue one
)


async def test_both_paths_store_alike(
    paths: tuple[dict[bool, MemoryEngine], list[bool]], database_url: str
) -> None:
    """Duplicates by text and by meaning, a new fact and a slot's supersession come out the same on both paths."""
    engines, beside = paths
    outcomes: dict[bool, list[tuple[StoreOutcome, int]]] = {}
    stored: dict[bool, list[tuple[Any, ...]]] = {}
    for spare, eng in engines.items():
        scope = Scope(f"player-{uuid4().hex[:10]}", "letia")
        ids: list[UUID] = []
        outcomes[spare] = []
        for step in STEPS:
            (result,) = await eng.store(scope, [step])
            if result.memory_id not in ids:
                ids.append(result.memory_id)
            outcomes[spare].append((result.outcome, ids.index(result.memory_id)))
        stored[spare] = [(r["content"], r["importance"], r["valid"], r["superseded_by"] is not None, r["vector"])
                        for r in await rows(database_url, scope)]
    assert beside == [True] * len(STEPS) + [False] * len(STEPS)
    assert outcomes[True] == outcomes[False]
    assert [o for o, _ in outcomes[True]] == [StoreOutcome.CREATED, StoreOutcome.DUPLICATE, StoreOutcome.DUPLICATE,
                                              StoreOutcome.CREATED, StoreOutcome.CREATED, StoreOutcome.SUPERSEDED]
    assert stored[True] == stored[False]  # the same rows, importance raised alike, the same vectors
    assert [valid for _, _, valid, _, _ in stored[True]] == [True, True, False, True]


async def test_a_replayed_request_id_writes_once_and_a_reused_one_writes_nothing(
    paths: tuple[dict[bool, MemoryEngine], list[bool]], scope: Scope, database_url: str
) -> None:
    """The transaction answers a repeat under its lock (no early look-up on this path) and refuses another body."""
    engines, beside = paths
    first = await engines[True].store(scope, [fact("바다를 좋아함")], request_id="turn-1")
    again = await engines[True].store(scope, [fact("바다를 좋아함")], request_id="turn-1")
    assert again == first
    with pytest.raises(RequestIdReusedError):
        await engines[True].store(scope, [fact("산을 좋아함")], request_id="turn-1")
    assert beside == [True, True, True]
    assert [r["content"] for r in await rows(database_url, scope)] == ["바다를 좋아함"]


async def test_a_failed_transaction_writes_nothing_and_the_next_store_goes_through(
    paths: tuple[dict[bool, MemoryEngine], list[bool]], scope: Scope, database_url: str
) -> None:
    """A fact superseding a memory the scope does not have fails the request whole while the model ran beside."""
    engines, _ = paths
    with pytest.raises(UnknownSupersedeTargetError):
        await engines[True].store(scope, [fact("기차를 좋아함"), fact("버스를 좋아함", supersedes=(uuid4(),))])
    assert await rows(database_url, scope) == []
    (ok,) = await engines[True].store(scope, [fact("기차를 좋아함")])
    assert ok.outcome is StoreOutcome.CREATED
    assert len(await rows(database_url, scope)) == 1


async def test_concurrent_stores_of_one_scope_each_write(
    paths: tuple[dict[bool, MemoryEngine], list[bool]], scope: Scope, database_url: str
) -> None:
    """Stores racing on one scope each hold its lock in turn while their model calls run; every fact is written."""
    engines, _ = paths
    texts = ["사과를 좋아함", "포도를 좋아함", "수박을 좋아함", "딸기를 좋아함"]
    results = await asyncio.gather(*(engines[True].store(scope, [fact(t)]) for t in texts))
    assert all(r.outcome is StoreOutcome.CREATED for (r,) in results)
    assert sorted(r["content"] for r in await rows(database_url, scope)) == sorted(texts)


async def test_a_caller_vector_beside_a_text_keeps_its_vector(
    paths: tuple[dict[bool, MemoryEngine], list[bool]], scope: Scope, database_url: str
) -> None:
    """A request mixing a caller's vector and a text to embed: the caller's is stored as given, the other made."""
    engines, beside = paths
    given: Vector = await _vector(engines[True].embedder.embed_passages(["전혀 다른 문장"]))
    await engines[True].store(scope, [fact("우산을 좋아함", embedding=given), fact("장화를 좋아함")])
    assert beside == [True]
    stored = {r["content"]: r["vector"] for r in await rows(database_url, scope)}
    made = await _vector(engines[True].embedder.embed_passages(["장화를 좋아함"]))
    assert _parsed(stored["우산을 좋아함"]) == pytest.approx(list(given), abs=1e-6)
    assert _parsed(stored["장화를 좋아함"]) == pytest.approx(list(made), abs=1e-6)


async def _vector(call: Awaitable[Sequence[Vector]]) -> Vector:
    (vector,) = await call
    return vector


def _parsed(text: str) -> list[float]:
    return [float(x) for x in text.strip("[]").split(",")]
