"""The pool's connections run prepared statements on the plan cache mode configured (generic plans by default)."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest
from npc_memory.config.database import PlanCacheMode, PoolSettings
from npc_memory.domain.model import ContentType, NewMemory, Scope, SearchQuery, Speaker, Subject, Weights
from npc_memory.engine import MemoryEngine
from npc_memory.store import search as store_search
from npc_memory.store.pool import Database

SEARCHES = 8
PLAN_COUNTS = """
SELECT COALESCE(sum(generic_plans), 0) AS generic, COALESCE(sum(custom_plans), 0) AS custom
FROM pg_prepared_statements WHERE statement LIKE '%scope_rows%'
"""


async def plan_counts(db: Database) -> tuple[int, int]:
    """Generic and custom plans made for the search statements on the pool's one connection."""
    async with db.connection() as conn:
        row = await (await conn.execute(PLAN_COUNTS)).fetchone()
    assert row is not None
    return int(row["generic"]), int(row["custom"])


async def _searches_and_plans(url: str, mode: PlanCacheMode, scopes: list[Scope]) -> tuple[str, int, int]:
    """Run the search statement ``SEARCHES`` times over ``scopes`` on one connection; its mode and plan counts."""
    db = Database(url, PoolSettings(min_size=1, max_size=1, plan_cache_mode=mode))
    await db.open()
    try:
        vector = np.full(384, 1 / np.sqrt(384), dtype=np.float32)
        for i in range(SEARCHES):
            query = SearchQuery(scope=scopes[i % len(scopes)], text="산책", limit=5, weights=Weights(),
                                now=datetime.now(UTC), embedding=vector)
            await store_search.search_ranked(db, query, ["산책"], 20, "bm25")
        async with db.connection() as conn:
            shown = await (await conn.execute("SHOW plan_cache_mode")).fetchone()
        generic, custom = await plan_counts(db)
    finally:
        await db.close()
    assert shown is not None
    return str(shown["plan_cache_mode"]), generic, custom


@pytest.mark.parametrize(("mode", "generic", "custom"), [("force_generic_plan", SEARCHES, 0),
                                                          ("force_custom_plan", 0, SEARCHES)])
async def test_searches_run_on_the_configured_plans(engine: MemoryEngine, database_url: str, scope: Scope,
                                                    mode: PlanCacheMode, generic: int, custom: int) -> None:
    """Every execution of the prepared search is planned as the setting says: the default plans once, not each time.

    A player with memories and a new player with none share the connection, as in a game: under PostgreSQL's
    ``auto`` such a mix can keep every execution re-planned (docs/decisions/generic-plans.md).
    """
    await engine.store(scope, [NewMemory(Speaker.USER, Subject.USER, "user", ContentType.FACT, "공원에서 산책했어")])
    assert await _searches_and_plans(database_url, mode, [scope, Scope(scope.user_id + "-new", "letia")]) == (
        mode, generic, custom)


def test_the_service_asks_for_generic_plans_by_default() -> None:
    """The pool's default is the generic plan (store/pool.py says why)."""
    assert PoolSettings().plan_cache_mode == "force_generic_plan"
