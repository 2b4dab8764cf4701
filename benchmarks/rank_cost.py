"""What ranking a held scope costs, with the last search's selection of rows reused and made afresh, one run.

    python -m benchmarks.rank_cost [--rows 10000] [--queries 400] [--json out.json]

Uses (and seeds on first use) the database of ``benchmarks.search_speed`` at that scale and holds every scope in
one in-process engine. Each request (a pool question's text and real e5 vector, a random scope, the service's
weights, 50 candidates a side, 20 hits) is ranked by domain/scope_rank.py twice, interleaved, the order alternating:
with the scope's ``KeptMemo`` (what a server does) and with a fresh selection (what it did before the memo; the
same arithmetic). Each is timed ``cold`` (after reading 64 MB, as after a model call or another request evicted the
caches) and at once again (``hot``). Both answers must be the same rows, scores and cosines, float for float.
"""

from __future__ import annotations

import argparse
import asyncio
import random
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
from npc_memory.runtime import open_engine
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


async def run(url: str, scopes: list[tuple[str, str, int]], pool: Pool, queries: int) -> dict[str, Any]:
    """Both ways on ``queries`` requests; percentiles per way and temperature."""
    rng = random.Random(3)
    texts = distinct_questions(pool.queries)
    rng.shuffle(texts)
    asks = plan(rng, scopes, pool, queries)
    times: dict[str, list[float]] = {k: [] for k in ("memo cold", "memo hot", "fresh cold", "fresh hot")}
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
                ("memo", partial(rank, cols, query, terms, PER_SIDE, rows.memo)),
                ("fresh", partial(rank, cols, query, terms, PER_SIDE)),
            ]
            answers = []
            for name, call in ways if i % 2 == 0 else ways[::-1]:
                EVICT.sum()
                ms, out = _timed(call)
                times[f"{name} cold"].append(ms)
                times[f"{name} hot"].append(_timed(call)[0])
                answers.append([(r.row, r.scores, r.cosine) for r in out])
            if answers[0] != answers[1]:
                raise SystemExit(f"request {i}: the two ways answered differently")
    figures = {k: percentiles(v) for k, v in times.items()}
    return {"queries": queries, "scope_rows": sorted(r.count for r in held.values()), "figures": figures,
            "memo / fresh p50": {t: figures[f"memo {t}"]["p50"] / figures[f"fresh {t}"]["p50"]
                                 for t in ("cold", "hot")}}


def main() -> None:
    """Seed if needed, rank both ways, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--data-dir", type=Path, default=Path(tempfile.gettempdir()) / "npc-memory-speed")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    pool = load_pool()
    pg, scopes = ensure_seeded(args.data_dir / str(args.rows), args.rows, pool)
    try:
        result = asyncio.run(run(pg.url, scopes, pool, args.queries))
    finally:
        pg.stop()
    emit(result, args.json)


if __name__ == "__main__":
    main()
