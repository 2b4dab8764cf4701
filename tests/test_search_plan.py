"""The search statement's last step fetches each candidate's row by key, on the generic plan the pool uses.

Joined to the candidates, the generic plan (estimating a handful of rows on both sides) fetched the rows once and
then compared every candidate with every row in a nested loop: 99 x 99 comparisons, ~1.2 ms of a 4 ms statement.
This test fails on that form: no join filter may throw away more rows than a few per candidate.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

import numpy as np
import psycopg
from npc_memory.domain.model import ContentType, NewMemory, Scope, SearchQuery, Speaker, Subject, Weights
from npc_memory.engine import MemoryEngine
from npc_memory.store.search_sql import compiled_search, search_params
from pgvector.psycopg import register_vector
from psycopg import sql

ROWS = 200
PER_SIDE = 50
REMOVED_BY_JOIN = re.compile(r"Rows Removed by Join Filter: (\d+)")


def _unit(rng: np.random.Generator) -> np.ndarray:
    v = rng.standard_normal(384).astype(np.float32)
    return v / np.linalg.norm(v)


async def test_candidates_are_fetched_by_key(engine: MemoryEngine, database_url: str, scope: Scope) -> None:
    """Over 100 candidates, and no join throws away more than a few rows per candidate."""
    rng = np.random.default_rng(31)
    facts = [NewMemory(Speaker.USER, Subject.USER, "user", ContentType.FACT, f"{i}번째 날 공원에서 산책했어",
                       importance=1 + i % 9, embedding=_unit(rng)) for i in range(ROWS)]
    await engine.store(scope, facts)
    query = SearchQuery(scope=scope, text="공원 산책", limit=10, weights=Weights(), now=datetime.now(UTC),
                        embedding=_unit(rng))
    statement = compiled_search(query, ["공원", "산책"], "bm25")
    args = statement.args(search_params(query, ["공원", "산책"], PER_SIDE, "bm25"))
    with psycopg.connect(database_url, autocommit=True) as conn:
        register_vector(conn)
        conn.execute("SET plan_cache_mode = force_generic_plan")
        conn.execute(sql.SQL("PREPARE ranked AS {}").format(sql.SQL(statement.query.decode())))
        values = sql.SQL(", ").join(sql.Literal(a) for a in args)
        plan = [r[0] for r in conn.execute(sql.SQL("EXPLAIN (ANALYZE, COSTS OFF) EXECUTE ranked ({})").format(values))]
        hits = conn.execute(sql.SQL("EXECUTE ranked ({})").format(values)).fetchall()
    assert len(hits) == 10
    assert any("loops=" in line for line in plan)
    removed = [int(m.group(1)) for line in plan if (m := REMOVED_BY_JOIN.search(line))]
    assert max(removed, default=0) <= 3 * PER_SIDE, "\n".join(plan)  # the old form: ~(3 x PER_SIDE) squared
