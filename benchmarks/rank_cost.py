"""What ranking a held scope costs, with the last search's selection of rows reused and made afresh, one run.

    python -m benchmarks.rank_cost [--rows 10000] [--queries 400] [--before-src DIR] [--json out.json]

Uses (and seeds on first use) the database of ``benchmarks.search_speed`` at that scale and holds every scope in
one in-process engine. Each request (a pool question's text and real e5 vector, a random scope, the service's
weights, 50 candidates a side, 20 hits) is ranked by domain/scope_rank.py twice, interleaved, the order alternating:
with the scope's ``KeptMemo`` (what a server does) and with a fresh selection (what it did before the memo; the
same arithmetic). Each is timed ``cold`` (after reading 64 MB, as after a model call or another request evicted the
caches) and at once again (``hot``). Both answers must be the same rows, scores and cosines, float for float.

With ``--before-src DIR`` (a ``git archive COMMIT | tar -x -C DIR`` tree) the two ways are DIR's
domain/scope_rank.py ``rank`` and this tree's, both with the memo: an earlier ranking against this one, the same
requests, and again the same answers required (the types of the numbers too).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import random
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from npc_memory.domain.model import Scope, SearchQuery, Weights
from npc_memory.domain.scope_rank import RankedRow, rank
from npc_memory.server.runtime import open_engine
from npc_memory.store.scope_rows import ScopeRows

from benchmarks.harness import caller_vector_config, emit
from benchmarks.scope_cache import held_by
from benchmarks.search_speed import ensure_seeded, plan
from benchmarks.search_speed_parts import distinct_questions, percentiles
from loadtest.pool import Pool, load_pool

EVICT = np.ones(8_000_000)
"""64 MB read between the cold timings: more than this machine's caches."""
LIMIT = 20
PER_SIDE = 50


def _timed(call: Callable[[], list[RankedRow]]) -> tuple[float, list[RankedRow]]:
    start = time.perf_counter()
    out = call()
    return (time.perf_counter() - start) * 1000.0, out


Rank = Callable[..., list[RankedRow]]


def earlier_rank(tree: Path) -> Rank:
    """``rank`` of an earlier tree's domain/scope_rank.py (the rest of the service is this tree's)."""
    source = tree / "service/npc_memory/domain/scope_rank.py"
    spec = importlib.util.spec_from_file_location("earlier_scope_rank", source)
    if spec is None or spec.loader is None:
        raise SystemExit(f"no domain/scope_rank.py under {tree}/service")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    found: Rank = module.rank
    return found


def _answer(out: list[RankedRow]) -> list[tuple[Any, ...]]:
    """What must match between the two ways: each hit's row, scores and cosine, and the types of the numbers."""
    return [(r.row, r.scores, r.cosine, *(type(v).__name__ for v in (r.row, r.cosine, *vars(r.scores).values())))
            for r in out]


async def run(url: str, scopes: list[tuple[str, str, int]], pool: Pool, queries: int,
              before: Rank | None = None) -> dict[str, Any]:
    """Both ways on ``queries`` requests; percentiles per way and temperature."""
    rng = random.Random(3)
    texts = distinct_questions(pool.queries)
    rng.shuffle(texts)
    asks = plan(rng, scopes, pool, queries)
    names = ("before", "this") if before is not None else ("memo", "fresh")
    times: dict[str, list[float]] = {f"{n} {t}": [] for n in names for t in ("cold", "hot")}
    async with open_engine(caller_vector_config(url, pool.dim)) as engine:
        cache = held_by(engine)
        held: dict[Scope, ScopeRows] = {}
        for ask in asks:
            scope = Scope(ask.user_id, ask.heroine_id)
            while scope not in held:
                await engine.search(SearchQuery(scope=scope, text="", limit=1, weights=Weights(),
                                                now=datetime.now(UTC), embedding=ask.vector))
                await cache.loaded(scope)
                rows = await cache.current(engine.db, scope)
                if rows is not None:
                    held[scope] = rows
        for i, ask in enumerate(asks):
            rows = held[Scope(ask.user_id, ask.heroine_id)]
            text = texts[i % len(texts)]
            query = SearchQuery(scope=Scope(ask.user_id, ask.heroine_id), text=text, limit=LIMIT, weights=Weights(),
                                now=datetime.now(UTC), embedding=ask.vector)
            terms = engine.tokenizer.query_terms(text)
            cols = rows.columns()
            ways: list[tuple[str, Callable[[], list[RankedRow]]]] = [
                ("before", partial(before, cols, query, terms, PER_SIDE, rows.memo)),
                ("this", partial(rank, cols, query, terms, PER_SIDE, rows.memo)),
            ] if before is not None else [
                ("memo", partial(rank, cols, query, terms, PER_SIDE, rows.memo)),
                ("fresh", partial(rank, cols, query, terms, PER_SIDE)),
            ]
            answers = []
            for name, call in ways if i % 2 == 0 else ways[::-1]:
                EVICT.sum()
                ms, out = _timed(call)
                times[f"{name} cold"].append(ms)
                times[f"{name} hot"].append(_timed(call)[0])
                answers.append(_answer(out))
            if answers[0] != answers[1]:
                raise SystemExit(f"request {i}: the two ways answered differently")
    figures = {k: percentiles(v) for k, v in times.items()}
    first, second = names[::-1] if before is not None else names
    return {"queries": queries, "scope_rows": sorted(r.count for r in held.values()), "figures": figures,
            f"{first} / {second} p50": {t: figures[f"{first} {t}"]["p50"] / figures[f"{second} {t}"]["p50"]
                                        for t in ("cold", "hot")}}


def main() -> None:
    """Seed if needed, rank both ways, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--data-dir", type=Path, default=Path(tempfile.gettempdir()) / "npc-memory-speed")
    parser.add_argument("--before-src", type=Path, help="an earlier tree whose ranking to compare with this one's")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    pool = load_pool()
    pg, scopes = ensure_seeded(args.data_dir / str(args.rows), args.rows, pool)
    try:
        before = earlier_rank(args.before_src) if args.before_src else None
        result = asyncio.run(run(pg.url, scopes, pool, args.queries, before))
    finally:
        pg.stop()
    emit(result, args.json)


if __name__ == "__main__":
    main()
