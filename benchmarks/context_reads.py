"""BuildContext's two reads side by side (the service) against one after another (the earlier form), in-process.

    python -m benchmarks.context_reads [--rows 4000] [--queries 150] [--database-url DSN] [--json out]

A heroine's block needs the scope's profile rows (up to 200, most important first) and the utterance's search
hits. ``MemoryEngine.build_context`` embeds the utterance first, then runs the profile read and the search
statement at once on two pooled connections; the baseline runs the same pieces (``store.context.profile_rows``,
``MemoryEngine.search``, ``domain.context.assemble``) one after another, as BuildContext did before. A fresh
embedded PostgreSQL (or the given empty database) is seeded by loadtest.seed (scopes of ~100 to ~2,000 memories);
every utterance is embedded once beforehand (the query cache then serves both forms: the model is not compared),
and the two forms alternate which goes first, each after a short pause as a game's requests come.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from npc_memory.domain.context import ContextBlock, assemble
from npc_memory.domain.model import Scope, ScoredMemory, SearchQuery
from npc_memory.engine import MemoryEngine
from npc_memory.server.runtime import database_url, open_engine
from npc_memory.store import context

from benchmarks.search_speed_parts import distinct_questions
from benchmarks.write import bench_config, percentiles, print_latencies, run_main
from loadtest.pool import load_pool
from loadtest.seed import seed

BUDGET = 400
PAUSE_S = 0.05
FORMS = ("one after another (before)", "side by side (BuildContext)")


async def one_after_another(engine: MemoryEngine, scope: Scope, utterance: str, now: datetime) -> ContextBlock:
    """The block as BuildContext built it before: the profile read, then the search, then the assembly."""
    profile = await context.profile_rows(engine.db, scope, now, True, 200)
    hits: list[ScoredMemory] = await engine.search(SearchQuery(
        scope=scope, text=utterance, limit=10, weights=engine.search_settings.weights_for(scope.heroine_id), now=now,
        include_shared=True, recency_days=engine.search_settings.recency_days_for(scope.heroine_id)))
    return assemble(scope, profile, hits, BUDGET, "ko")


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    """Seed, embed every utterance once, time both forms alternately."""
    config = bench_config(args)
    config = replace(config, write=replace(config.write, tokenize_processes=0))
    pool = load_pool()
    texts = distinct_questions(pool.queries)[:args.queries]
    rng = random.Random(3)
    samples: dict[str, list[float]] = {f: [] for f in FORMS}
    async with database_url(config.database) as url:
        scopes = await asyncio.to_thread(seed, url, args.rows, progress=False)
        async with open_engine(replace(config, database=replace(config.database, url=url))) as engine:
            await engine.embedder.embed_queries(texts)  # into the query cache
            for i, text in enumerate(texts):
                s = rng.choice(scopes)
                scope, now = Scope(s.user_id, s.heroine_id), datetime.now(UTC)
                for form in FORMS if i % 2 else FORMS[::-1]:
                    await asyncio.sleep(PAUSE_S)
                    started = time.perf_counter()
                    if form == FORMS[0]:
                        await one_after_another(engine, scope, text, now)
                    else:
                        await engine.build_context(scope, text, BUDGET, True, "ko", now)
                    samples[form].append((time.perf_counter() - started) * 1000)
    return {"rows": args.rows, "scopes": len(scopes), "queries": len(texts)} | {
        f: percentiles(v) for f, v in samples.items()}


def show(s: dict[str, Any]) -> None:
    """Print the table."""
    print(f"BuildContext in-process, {s['rows']:,} rows in {s['scopes']} scopes, {s['queries']} utterances "
          f"(vectors cached), budget {BUDGET}\n")
    print_latencies("the two reads", {form: s[form] for form in FORMS}, width=30)
    print(f"\nside by side / one after another, p50: {s[FORMS[1]]['p50'] / s[FORMS[0]]['p50']:.2f}x")


def main() -> None:
    """Parse options, run, print, optionally write JSON."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--rows", type=int, default=4000, help="memories seeded (scopes of ~100 to ~2,000)")
    parser.add_argument("--queries", type=int, default=150, help="utterances, each asked both ways")
    run_main(parser, main_async, show)


if __name__ == "__main__":
    main()
