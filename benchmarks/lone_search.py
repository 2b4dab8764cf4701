"""Where a lone text search's time goes, in-process (no gRPC): each part timed, beside the whole search and the model.

    python -m benchmarks.lone_search [--rows 4000] [--queries 250] [--database-url DSN] [--json out]

A fresh embedded PostgreSQL (or the given empty database) is seeded with ``--rows`` memories by loadtest.seed
(scopes of ~100 to ~2,000 rows, real e5 vectors). For each distinct question, after a player's pause (0.25 s),
the engine's own steps run one after another and are timed: the query's terms, the timeline check, the model
(``MemoryEngine._embedded``), the period read from the text, and the search statement with the headroom the
defaults ask for, then the same statement once more at once (warm: what back-to-back benchmarks see). Each
after its own pause, ``MemoryEngine.search`` runs as the service runs it (the model overlapped with the terms
and the check) on the same question, the embedder alone, and a trivial round trip to the database (``SELECT 1``,
then the same again at once: how much of "cold" is the machine waking up rather than the statement's own work);
the four take turns at going first to last. The query cache is off, and the three that embed use different
spellings of the question, so none reaches a cached vector or terms.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import UTC, datetime
from functools import partial
from typing import Any

from npc_memory.domain import dialogue
from npc_memory.domain.model import Scope, SearchQuery, Weights
from npc_memory.embedding.base import Embedder
from npc_memory.engine import MemoryEngine
from npc_memory.server.runtime import database_url, open_engine
from npc_memory.store import search as store_search

from benchmarks.search_speed_parts import distinct_questions
from benchmarks.write import bench_config, percentiles, print_latencies, run_main
from loadtest.pool import load_pool
from loadtest.seed import ScopeInfo, seed

PAUSE_S = 0.25
PARTS = ("terms", "timeline check", "model", "period", "statement", "parts in a row", "search (service)",
         "search, all beside the model", "embedder alone", "statement again at once", "SELECT 1 after the pause",
         "SELECT 1 at once",
         "held: sync after the model", "held: sync beside the model")


class Overlapped:
    """The engine's embedder, saying its calls never run wide, so the search overlaps everything with the model.

    Tokenising, the timeline check and the held scope's sync then run beside the model, as in every text search
    before the twelfth round (2026-11-25).
    """

    def __init__(self, inner: Embedder) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def runs_wide(self) -> bool:
        """Never: the caller overlaps its work with the model."""
        return False


async def one(engine: MemoryEngine, query: SearchQuery) -> dict[str, float]:
    """The parts of one search run one after another, in milliseconds."""
    marks = [time.perf_counter()]
    terms = engine._keyword_terms(query)
    marks.append(time.perf_counter())
    await engine._check_view(query.scope.user_id, query.view)
    marks.append(time.perf_counter())
    query = await engine._embedded(query)
    marks.append(time.perf_counter())
    query = engine.with_period(query)
    asked = replace(query, limit=query.limit * dialogue.REPEAT_HEADROOM)
    marks.append(time.perf_counter())
    args = (engine.db, asked, terms, engine.search_settings.candidates, engine.keyword_backend)
    await store_search.search_ranked(*args)
    marks.append(time.perf_counter())
    ms = [(b - a) * 1000 for a, b in itertools.pairwise(marks)]
    await store_search.search_ranked(*args)  # the same statement at once: warm, as back-to-back benchmarks run it
    again = (time.perf_counter() - marks[-1]) * 1000
    return dict(zip(PARTS, [*ms, (marks[-1] - marks[0]) * 1000], strict=False)) | {"statement again at once": again}


async def measure(engine: MemoryEngine, scopes: list[ScopeInfo], texts: list[str]) -> dict[str, Any]:
    """Every question: the parts, the service's search, the embedder alone; each after a pause."""
    samples: dict[str, list[float]] = {p: [] for p in PARTS}

    async def parts(query: SearchQuery) -> None:
        for part, ms in (await one(engine, query)).items():
            samples[part].append(ms)

    async def whole(query: SearchQuery) -> None:
        started = time.perf_counter()
        await engine.search(replace(query, text=query.text + " !"))
        samples["search (service)"].append((time.perf_counter() - started) * 1000)

    beside = replace(engine, embedder=Overlapped(engine.embedder))

    async def overlapped(query: SearchQuery) -> None:
        started = time.perf_counter()
        await beside.search(replace(query, text=query.text + " ~!"))
        samples["search, all beside the model"].append((time.perf_counter() - started) * 1000)

    async def alone(query: SearchQuery) -> None:
        started = time.perf_counter()
        await engine.embedder.embed_queries([query.text + " ?"])
        samples["embedder alone"].append((time.perf_counter() - started) * 1000)

    async def ping(_: SearchQuery) -> None:
        for part in ("SELECT 1 after the pause", "SELECT 1 at once"):
            started = time.perf_counter()
            await engine.db.ping()
            samples[part].append((time.perf_counter() - started) * 1000)

    async def held(query: SearchQuery, beside: bool) -> None:
        """After the model: a held scope's sync and ranking, or (``beside``) what is left of them.

        With ``beside`` the sync went out with the model, as engine.search sends it. A scope not held yet is not
        counted.
        """
        cache = engine.scope_cache
        if cache is None:
            return
        terms = engine._keyword_terms(query)
        spelled = replace(query, text=query.text + (" ~" if beside else " ."))  # never a cached vector
        embedding = asyncio.ensure_future(engine._embedded(spelled))
        synced = asyncio.ensure_future(cache.current(engine.db, query.scope)) if beside else None
        asked = await embedding
        started = time.perf_counter()
        rows = await (synced if synced is not None else cache.current(engine.db, query.scope))
        if rows is not None and cache.ranked(rows, asked, terms, engine.search_settings.candidates) is not None:
            name = "held: sync beside the model" if beside else "held: sync after the model"
            samples[name].append((time.perf_counter() - started) * 1000)

    steps: list[Callable[[SearchQuery], Awaitable[None]]] = [
        parts, whole, overlapped, alone, ping, partial(held, beside=False), partial(held, beside=True)]
    for i, text in enumerate(texts):
        s = scopes[i % len(scopes)]
        query = SearchQuery(scope=Scope(s.user_id, s.heroine_id), text=text, limit=10, weights=Weights(),
                            now=datetime.now(UTC))
        for step in steps[i % len(steps):] + steps[:i % len(steps)]:  # each in every position alike
            await asyncio.sleep(PAUSE_S)
            await step(query)
    return {part: percentiles(ms) for part, ms in samples.items()}


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    """Seed a fresh database, open the engine with the query cache off, measure."""
    config = bench_config(args)
    config = replace(config, embedding=replace(config.embedding, query_cache_size=0),
                     write=replace(config.write, tokenize_processes=0))
    pool = load_pool()
    texts = distinct_questions(pool.queries)
    random.Random(2).shuffle(texts)
    async with database_url(config.database) as url:
        scopes = await asyncio.to_thread(seed, url, args.rows, progress=False)
        async with open_engine(replace(config, database=replace(config.database, url=url))) as engine:
            summary = await measure(engine, scopes, texts[:args.queries])
    summary["rows"], summary["scopes"] = args.rows, len(scopes)
    return summary


def show(s: dict[str, Any]) -> None:
    """Print the table."""
    print(f"lone text searches in-process, {s['rows']:,} rows in {s['scopes']} scopes, "
          f"{s['terms']['n']} questions, {PAUSE_S} s apart\n")
    print_latencies("part", {part: s[part] for part in PARTS})
    gap = s["search (service)"]["p50"] - s["embedder alone"]["p50"]
    print(f"\nsearch (service) p50 - embedder alone p50: {gap:+.2f} ms; statement p50 {s['statement']['p50']:.2f} ms")
    old = s["search, all beside the model"]["p50"] - s["embedder alone"]["p50"]
    print(f"search with everything beside the model (before) p50 - embedder alone p50: {old:+.2f} ms")
    wake = s["SELECT 1 after the pause"]["p50"] - s["SELECT 1 at once"]["p50"]
    held = s["held: sync after the model"], s["held: sync beside the model"]
    print(f"held scope, after the model p50: sync then ranking {held[0]['p50']:.2f} ms, sync sent beside the model "
          f"{held[1]['p50']:.2f} ms")
    print(f"a round trip after the pause costs {wake:+.2f} ms p50 more than at once (the machine waking up); "
          f"the statement after the pause {s['statement']['p50'] - s['statement again at once']['p50']:+.2f} ms")


def main() -> None:
    """Parse options, run, print, optionally write JSON."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--rows", type=int, default=4000, help="memories seeded (scopes of ~100 to ~2,000)")
    parser.add_argument("--queries", type=int, default=250, help="distinct questions asked")
    run_main(parser, main_async, show)


if __name__ == "__main__":
    main()
