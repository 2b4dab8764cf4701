"""The PGroonga keyword backend: query building and backend choice everywhere; searches on the test server.

`scripts/build-extensions` (run by `scripts/setup --dev`) builds PGroonga into the test PostgreSQL, so the searches
run on every test server; against another server (NPC_MEMORY_TEST_DATABASE_URL) it must have the extension too.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest
from npc_memory.domain.model import ContentType, NewMemory, Scope, SearchQuery, Speaker, Subject, Weights
from npc_memory.engine import MemoryEngine
from npc_memory.errors import ConfigError
from npc_memory.server.runtime import keyword_backend, resolve_backend
from npc_memory.store.search_pgroonga import pgroonga_available, pgroonga_query, prepare_pgroonga

MISSING = (
    "PGroonga is not installed on the server under test (pg_available_extensions has no 'pgroonga'); "
    "scripts/build-extensions installs it into the embedded PostgreSQL"
)


def test_query_is_the_morphemes_quoted_and_joined_by_or() -> None:
    """고양이를 좋아해 becomes '"고양이" OR "좋아하다"'; repeats dropped, quotes and backslashes escaped."""
    assert pgroonga_query(["고양이", "좋아하다", "고양이"]) == '"고양이" OR "좋아하다"'
    assert pgroonga_query(['say"hi', "a\\b"]) == '"say\\"hi" OR "a\\\\b"'


@pytest.mark.parametrize(
    ("configured", "available", "expected"),
    [
        pytest.param("auto", True, "pgroonga", id="auto-with-pgroonga"),
        pytest.param("auto", False, "bm25", id="auto-without-pgroonga"),
        pytest.param("bm25", True, "bm25", id="bm25-always-bm25"),
        pytest.param("pgroonga", True, "pgroonga", id="pgroonga-present"),
    ],
)
def test_backend_resolution(configured: str, available: bool, expected: str) -> None:
    """The `auto` setting picks PGroonga only when the extension is available; an explicit choice is kept."""
    assert resolve_backend(configured, available) == expected  # type: ignore[arg-type]


def test_asking_for_a_missing_pgroonga_fails_at_start() -> None:
    """keyword_backend = pgroonga on a server without it is a configuration error, not a silent BM25."""
    with pytest.raises(ConfigError, match="pgroonga"):
        resolve_backend("pgroonga", False)


async def test_auto_resolves_to_pgroonga_where_the_server_has_it(engine: MemoryEngine) -> None:
    """`auto` names the backend the server has: PGroonga here; the tests' engine is set to BM25 explicitly."""
    assert await pgroonga_available(engine.db), MISSING
    assert await keyword_backend(engine.db, "auto") == "pgroonga"
    assert engine.keyword_backend == "bm25"


@pytest.fixture
async def groonga(engine: MemoryEngine) -> MemoryEngine:
    """The engine switched to the PGroonga backend."""
    assert await pgroonga_available(engine.db), MISSING
    await prepare_pgroonga(engine.db)
    return replace(engine, keyword_backend="pgroonga")


async def _store(engine: MemoryEngine, scope: Scope, contents: list[str]) -> None:
    await engine.store(scope, [NewMemory(speaker=Speaker.USER, subject=Subject.USER, subject_id="user",
                                         content_type=ContentType.FACT, content=c) for c in contents])


def _query(scope: Scope, text: str, weights: Weights | None = None) -> SearchQuery:
    return SearchQuery(scope=scope, text=text, limit=10, weights=weights or Weights(), now=datetime.now(UTC))


async def test_pgroonga_matches_a_noun_whatever_its_particle(groonga: MemoryEngine, scope: Scope) -> None:
    """고양이가 in the query finds 고양이를 in a memory: both are the morpheme 고양이."""
    await _store(groonga, scope, ["고양이를 좋아함", "비 오는 날을 싫어함"])
    hits = await groonga.search(_query(scope, "고양이가 좋아?", Weights(0, 0, 0, 1)))
    assert hits[0].memory.content == "고양이를 좋아함"
    assert hits[0].scores.keyword == 1.0
    assert [h.scores.keyword for h in hits if h.memory.content != "고양이를 좋아함"] == [0.0]


async def test_pgroonga_keyword_scores_span_zero_to_one(groonga: MemoryEngine, scope: Scope) -> None:
    """The best PGroonga hit scores 1, others lower, memories without a query term 0."""
    await _store(groonga, scope, ["고양이 고양이 노래를 부름", "고양이를 좋아함", "강아지를 산책시킴"])
    hits = await groonga.search(_query(scope, "고양이"))
    by_content = {h.memory.content: h.scores.keyword for h in hits}
    assert max(by_content.values()) == 1.0
    assert by_content["강아지를 산책시킴"] == 0.0
    assert all(0.0 <= k <= 1.0 for k in by_content.values())


async def test_pgroonga_stays_inside_the_scope(groonga: MemoryEngine, scope: Scope) -> None:
    """Another heroine's memory with the same word is never a PGroonga hit."""
    await _store(groonga, Scope(scope.user_id, "roco"), ["수영 비밀을 말함"])
    await _store(groonga, scope, ["레티아와 산책함"])
    hits = await groonga.search(_query(scope, "수영 비밀"))
    assert [h.memory.content for h in hits] == ["레티아와 산책함"]
