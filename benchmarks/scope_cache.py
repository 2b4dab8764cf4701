"""A search ranked from the scope held in memory (store/scope_cache.py) beside the search statement, one run.

    python -m benchmarks.scope_cache [--queries 300] [--saved] [--data-dir DIR] [--json PATH]

On benchmarks.search_speed_load's common-word scopes (500 and 2,000 memories, both query terms in ~80% of them;
seeded into an embedded PostgreSQL on first use), through one in-process engine with callers' vectors, so only
the ranking path differs:

- ``held`` / ``statement``: the same search (the common query, a pool question's real e5 vector) ranked from the
  held scope (its sync round trip included) and by the statement, interleaved, the order alternating;
- ``store then held`` / ``store then statement``: a player who talks and asks in turn: one new memory stored,
  then the search; the held path's sync brings that one row in (the store is not timed);
- ``first search``: a scope not held yet (a process's first search of it): the statement answers while the scope
  is read in the background; ``scope read``: from that search's start until the scope is held.

``--saved``: each scope's player first saves (a save point) and then changes 100 of the scope's memories (a fifth
closed, the rest re-weighted): change entries, which the timeline view applies, so both paths read the view (the held
scope synced with ``VIEW_SYNC``). The saves, entries and timelines are deleted at the end.

Answers are compared (the same ids, in order, but for scores within 1e-5). Rows stored here are deleted at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from npc_memory.domain.model import (
    ContentType,
    MemoryFilter,
    NewMemory,
    Scope,
    ScoredMemory,
    SearchQuery,
    Speaker,
    Subject,
    Weights,
)
from npc_memory.engine import MemoryEngine
from npc_memory.server.runtime import open_engine
from npc_memory.store.scope_cache import ScopeCache
from psycopg import sql

from benchmarks.harness import caller_vector_config, emit
from benchmarks.search_speed_load import COMMON_DATA_DIR, COMMON_QUERY, COMMON_SUFFIX, common_database
from benchmarks.search_speed_parts import percentiles
from loadtest.pool import Pool

STORED = "scope-cache-bench"
"""The subject id of the memories this benchmark stores (deleted at the end)."""
CLEAN = "DELETE FROM user_memories WHERE subject_id = %(s)s"
FIRST_SEARCHES = 20
SAVE_ID = "scope-cache-bench"
SAVED_CHANGES = 100
"""With ``--saved``: memories changed after the save (a fifth closed, the rest re-weighted): change entries."""
UNSAVE = tuple(sql.SQL("DELETE FROM {} WHERE user_id = ANY(%(users)s)").format(sql.Identifier(table))
               for table in ("memory_changes", "save_points", "timelines", "player_state"))
"""What ``--saved`` leaves, undone: the common scopes' players never saved, as the other benchmarks expect."""


def held_by(engine: MemoryEngine) -> ScopeCache:
    """The engine's held scopes (this benchmark needs them on)."""
    if engine.scope_cache is None:
        raise SystemExit("scope_cache_rows is 0: nothing to compare")
    return engine.scope_cache


async def _ms(call: Callable[[], Awaitable[list[ScoredMemory]]]) -> tuple[float, list[ScoredMemory]]:
    start = time.perf_counter()
    hits = await call()
    return (time.perf_counter() - start) * 1000.0, hits


def _differs(a: list[ScoredMemory], b: list[ScoredMemory]) -> bool:
    """Whether two answers differ beyond near-ties (rows whose final scores are within 1e-5 may swap)."""
    if len(a) != len(b):
        return True
    scores = {h.memory.id: h.scores.final for h in b}
    return any(abs(x.scores.final - y.scores.final) > 1e-5 or abs(scores.get(x.memory.id, -9.0) - x.scores.final)
               > 1e-5 for x, y in zip(a, b, strict=True))


async def _pair(engine: MemoryEngine, plain: MemoryEngine, query: SearchQuery, flip: bool,
                out: dict[str, list[float]], names: tuple[str, str]) -> bool:
    """Time the query through the held scope and the statement, in the order ``flip`` says; True if they differ."""
    runs = [(names[0], engine), (names[1], plain)]
    got = {}
    for name, eng in reversed(runs) if flip else runs:
        ms, got[name] = await _ms(lambda e=eng: e.search(query))  # type: ignore[misc]
        out[name].append(ms)
    return _differs(got[names[0]], got[names[1]])


def _ask(scope: Scope, vector: Any) -> SearchQuery:
    """The common query in ``scope`` with a pool question's vector, at the current time."""
    return SearchQuery(scope=scope, text=COMMON_QUERY, limit=10, weights=Weights(), now=datetime.now(UTC),
                       embedding=vector)


async def _measure_scope(engine: MemoryEngine, plain: MemoryEngine, scope: Scope, pool: Pool,
                         queries: int) -> dict[str, Any]:
    """Every case on one scope: percentiles per case and how many answers differed."""
    out: dict[str, list[float]] = {k: [] for k in (
        "held", "statement", "store then held", "store then statement", "first search", "first statement",
        "scope read")}
    questions = pool.query_vectors
    await engine.search(_ask(scope, questions[0]))  # the scope is read in the background: timed as "scope read"
    await held_by(engine).loaded(scope)
    differ = 0
    for i in range(queries):
        differ += await _pair(engine, plain, _ask(scope, questions[i % len(questions)]), i % 2 == 1, out,
                              ("held", "statement"))
    for i in range(queries // 3):
        fact = NewMemory(speaker=Speaker.USER, subject=Subject.USER, subject_id=STORED, content_type=ContentType.FACT,
                         content=f"{pool.passages[i % len(pool.passages)]}{COMMON_SUFFIX} {i}",
                         embedding=pool.passage_vectors[i % len(pool.passages)])
        q = _ask(scope, questions[i % len(questions)])
        for name, eng in (("store then held", engine), ("store then statement", plain)):
            await engine.store(scope, [replace(fact, content=f"{fact.content} {name}")])
            out[name].append((await _ms(lambda e=eng, q=q: e.search(q)))[0])  # type: ignore[misc]
    for i in range(FIRST_SEARCHES):
        cold = replace(engine, scope_cache=ScopeCache(engine.search_settings.scope_cache_rows))
        q = _ask(scope, questions[i])
        start = time.perf_counter()
        out["first search"].append((await _ms(lambda c=cold, q=q: c.search(q)))[0])  # type: ignore[misc]
        await held_by(cold).loaded(scope)
        out["scope read"].append((time.perf_counter() - start) * 1000.0)
        out["first statement"].append((await _ms(lambda q=q: plain.search(q)))[0])  # type: ignore[misc]
    figures = {k: percentiles(v) for k, v in out.items()}
    figures["ratio p50 held / statement"] = {"p50": figures["held"]["p50"] / figures["statement"]["p50"]}
    figures["ratio p99 held / statement"] = {"p99": figures["held"]["p99"] / figures["statement"]["p99"]}
    return {"figures": figures, "answers differing": differ}


async def _save(engine: MemoryEngine, scope: Scope, changed: int) -> None:
    """The player saves, then ``changed`` of the scope's newest memories change: change entries, the view's work."""
    await engine.create_save_point(scope.user_id, SAVE_ID)
    page, _ = await engine.list_page(scope, MemoryFilter(), False, changed, None)
    for i, m in enumerate(page):
        if i % 5 == 4:
            await engine.invalidate(scope, m.id, None)
        else:
            await engine.update(scope, m.id, importance=m.importance % 10 + 1)


async def run(url: str, scopes: list[tuple[str, str, int]], pool: Pool, queries: int,
              saved: bool = False) -> dict[str, Any]:
    """Every case on every common scope; the memories stored (and with ``saved`` the saves and changes) undone."""
    result: dict[str, Any] = {"queries": queries, "saved": saved, "at": datetime.now(UTC).isoformat(), "scopes": {}}
    async with open_engine(caller_vector_config(url, pool.dim)) as engine:
        plain = replace(engine, scope_cache=None)
        try:
            for user_id, heroine_id, rows in scopes:
                if saved:
                    await _save(engine, Scope(user_id, heroine_id), SAVED_CHANGES)
                result["scopes"][f"{rows} rows"] = await _measure_scope(
                    engine, plain, Scope(user_id, heroine_id), pool, queries)
        finally:
            async with engine.db.connection() as conn:
                await conn.execute(CLEAN, {"s": STORED})
                for statement in UNSAVE:
                    await conn.execute(statement, {"users": [user_id for user_id, _, _ in scopes]})
    return result


def report(result: dict[str, Any]) -> str:
    """One line per case and scope: p50 / p95 / p99 ms."""
    lines = []
    for name, scope in result["scopes"].items():
        lines.append(f"{name} (answers differing: {scope['answers differing']})")
        for case, f in scope["figures"].items():
            lines.append(f"  {case:28s} " + " / ".join(f"{k} {v:.2f}" for k, v in f.items() if k != "n"))
    return "\n".join(lines)


def main() -> None:
    """Run the comparison on the common-word scopes and print it."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--data-dir", type=Path, default=COMMON_DATA_DIR)
    parser.add_argument("--saved", action="store_true",
                        help="each player saves first and changes memories after it: the held scope is the view's")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with common_database(args.data_dir) as (url, scopes, pool, _):
        result = asyncio.run(run(url, scopes, pool, args.queries, args.saved))
    print(report(result))
    emit(result, args.json)


if __name__ == "__main__":
    main()
