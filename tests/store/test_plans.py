"""Reads that once ran per row on the pool's generic plan: a search with hops, an expand step, a search's last step.

The generic plan of a prepared statement estimates a handful of rows everywhere. The second hop once joined the
first hop's links to the view's rows so that every link was looked up again for every row joined (4,356 lookups
for 33 first-hop memories: 60.6 ms p50 instead of 6.4 at 10k rows, benchmarks.search_speed's hops = 2 line). Each
test fails on the form of its statement that did so.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import numpy as np
import psycopg
from npc_memory.domain.model import ContentType, NewMemory, Scope, SearchQuery, Speaker, Subject, Weights
from npc_memory.embedding.base import normalise
from npc_memory.engine import MemoryEngine
from npc_memory.store import search
from npc_memory.store.compiled import Compiled
from npc_memory.store.links import EVIDENCE_PARAMS, NEIGHBOURS
from npc_memory.store.search_sql import compiled_links, compiled_search, search_params
from npc_memory.store.view import view_params
from npc_memory.store.writes import scope_params
from pgvector.psycopg import register_vector
from psycopg import sql

ROWS = 120
LIMIT = 10
LINK_LOOPS = re.compile(r"on memory_links \w+ .*loops=(\d+)")


def _explained_search(database_url: str, query: SearchQuery, terms: list[str], per_side: int,
                      ) -> tuple[list[str], list[tuple[Any, ...]]]:
    """The search statement's EXPLAIN ANALYZE lines and its rows, prepared on the generic plan the pool forces."""
    statement = compiled_search(query, terms, "bm25")
    return explained(database_url, statement, search_params(query, terms, per_side, "bm25"))


def explained(database_url: str, statement: Compiled, params: dict[str, Any],
              ) -> tuple[list[str], list[tuple[Any, ...]]]:
    """A compiled statement's EXPLAIN ANALYZE lines and its rows, prepared on the generic plan the pool forces."""
    args = statement.args(params)
    with psycopg.connect(database_url, autocommit=True) as conn:
        register_vector(conn)
        conn.execute("SET plan_cache_mode = force_generic_plan")
        conn.execute(sql.SQL("PREPARE ranked AS {}").format(sql.SQL(statement.query.decode())))
        values = sql.SQL(", ").join(sql.Literal(a) for a in args)
        plan = [r[0] for r in conn.execute(sql.SQL("EXPLAIN (ANALYZE, COSTS OFF) EXECUTE ranked ({})").format(values))]
        hits = conn.execute(sql.SQL("EXECUTE ranked ({})").format(values)).fetchall()
    return plan, hits


async def test_the_second_hop_looks_each_memory_up_once(engine: MemoryEngine, database_url: str,
                                                         scope: Scope) -> None:
    """On the generic plan, no link lookup runs more often than there are memories to look up from."""
    rng = np.random.default_rng(5)
    facts = [NewMemory(Speaker.USER, Subject.USER, "user", ContentType.FACT, f"산책 기록 {i}번째 날",
                       embedding=v) for i, v in enumerate(normalise(rng.standard_normal((ROWS, 384))))]
    ids = [r.memory_id for r in await engine.store(scope, facts)]
    async with engine.db.connection() as conn:  # every memory linked to the next and the seventh next
        for k in (1, 7):
            for a, b in zip(ids, ids[k:], strict=False):
                await conn.execute("INSERT INTO memory_links (user_id, heroine_id, from_id, to_id, kind, depth, via) "
                                   "VALUES (%s, %s, %s, %s, 'related_to', 0, '')", (scope.user_id, scope.heroine_id,
                                                                                    a, b))
        await conn.execute("ANALYZE memory_links")
    query = SearchQuery(scope=scope, text="산책", limit=LIMIT, weights=Weights(), now=datetime.now(UTC),
                        embedding=normalise(rng.standard_normal((1, 384)))[0], hops=2)
    ranked = await search.search_ranked(engine.db, replace(query, hops=0), ["산책"], 50, "bm25")
    top = {"top_ids": [h.memory.id for h in ranked], "top_scores": [h.scores.final for h in ranked]}
    plan, hits = explained(database_url, compiled_links(query), search_params(query, ["산책"], 50, "bm25") | top)
    loops = loops_of(plan, LINK_LOOPS)
    assert loops, "\n".join(plan)
    reached = sum(1 for h in hits if h[-2] > 0)  # the hops column
    assert reached > 0
    # The first hop starts from the LIMIT ranked rows, the second from what the first reached (at most four links
    # each, both ways): far fewer than ROWS.
    assert max(loops) <= LIMIT * 4 + LIMIT, "\n".join(plan)


UNNEST_LOOPS = re.compile(r"Function Scan on unnest .*loops=(\d+)")


async def test_an_expand_step_reads_each_candidates_terms_once(engine: MemoryEngine, database_url: str,
                                                                 scope: Scope) -> None:
    """The terms shared with a frontier of three are counted in one pass over the candidates, not per pair.

    A count per candidate and frontier memory (a subquery each) made a deep step on a 1,358-row scope 33 ms.
    """
    rng = np.random.default_rng(6)
    # Each count of cats in two or three rows: a distinctive shared term, so the step links (docs/guide/links.md).
    facts = [NewMemory(Speaker.USER, Subject.USER, "user", ContentType.FACT,
                       f"{i}번째 산책에서 고양이 {i % 50}마리 봤어", embedding=v)
             for i, v in enumerate(normalise(rng.standard_normal((ROWS, 384))))]
    ids = [r.memory_id for r in await engine.store(scope, facts)]
    params = scope_params(scope) | view_params() | EVIDENCE_PARAMS | {
        "id": ids[0], "frontier": ids[1:4], "now": datetime.now(UTC), "per_depth": 5}
    with psycopg.connect(database_url, autocommit=True) as conn:
        register_vector(conn)
        plan = [r[0] for r in conn.execute(sql.Composed([sql.SQL("EXPLAIN (ANALYZE, COSTS OFF) "), NEIGHBOURS]),
                                           params)]
        found = conn.execute(NEIGHBOURS, params).fetchall()
    assert len(found) == 5
    loops = loops_of(plan, UNNEST_LOOPS)
    assert loops, "\n".join(plan)
    assert max(loops) <= ROWS, "\n".join(plan)


PER_SIDE = 50
REMOVED_BY_JOIN = re.compile(r"Rows Removed by Join Filter: (\d+)")


async def test_candidates_are_fetched_by_key(engine: MemoryEngine, database_url: str, scope: Scope) -> None:
    """The search's last step fetches each candidate's row by key.

    Joined to the candidates, the generic plan (estimating a handful of rows on both sides) fetched the rows once and
    compared every candidate with every row in a nested loop: 99 x 99, ~1.2 ms of a 4 ms statement. Over 100
    candidates here, no join may throw away more than a few rows per candidate.
    """
    rng = np.random.default_rng(31)
    vectors = normalise(rng.standard_normal((2 * ROWS, 384)))
    facts = [NewMemory(Speaker.USER, Subject.USER, "user", ContentType.FACT, f"{i}번째 날 공원에서 산책했어",
                       importance=1 + i % 9, embedding=v) for i, v in enumerate(vectors)]
    await engine.store(scope, facts)
    query = SearchQuery(scope=scope, text="공원 산책", limit=10, weights=Weights(), now=datetime.now(UTC),
                        embedding=normalise(rng.standard_normal((1, 384)))[0])
    plan, hits = _explained_search(database_url, query, ["공원", "산책"], PER_SIDE)
    assert PER_SIDE <= len(hits) <= 3 * PER_SIDE  # the candidate union: the dense, keyword and prior lists
    assert any("loops=" in line for line in plan)
    removed = [int(m.group(1)) for line in plan if (m := REMOVED_BY_JOIN.search(line))]
    assert max(removed, default=0) <= 3 * PER_SIDE, "\n".join(plan)  # the old form: ~(3 x PER_SIDE) squared


def loops_of(plan: list[str], nodes: re.Pattern[str]) -> list[int]:
    """The loop counts of the plan's lines that ``nodes`` matches (its first group: the count)."""
    return [int(m.group(1)) for line in plan if (m := nodes.search(line))]
