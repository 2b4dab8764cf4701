"""What work beside a lone model call does to the call: the model's own time, by what runs next to it.

    python -m benchmarks.beside_model [--questions 90] [--database-url DSN] [--json out.json]

The service's engine on an empty embedded PostgreSQL (or the given database), query cache off. For each question,
after a player's pause (0.25 s) each time, the bundled model embeds it once per variant, the variants rotating:
alone; behind ``ensure_future`` (the same call, awaited later); after the query's tokenising (Kiwi, on the event
loop); with the tokenising beside it (the model's thread started first, as every text search did before the
twelfth round); with a round trip to the database beside it (``SELECT 1``, as a held scope's sync goes); and
tokenising first, then the round trip beside it (what a text search now does when its call runs on every core).
Timed is the model's own call in its worker thread (``LocalE5Embedder._encode``), so the numbers show how the
call itself is slowed, not what the work beside it costs.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from npc_memory.embedding import local
from npc_memory.engine import MemoryEngine
from npc_memory.server.runtime import database_url, open_engine

from benchmarks.search_speed_parts import distinct_questions
from benchmarks.write import bench_config, percentiles, print_latencies, run_main
from loadtest.pool import load_pool

PAUSE_S = 0.25

Variant = Callable[[MemoryEngine, str], Awaitable[None]]


async def _alone(engine: MemoryEngine, text: str) -> None:
    await engine.embedder.embed_queries([text])


async def _behind_a_future(engine: MemoryEngine, text: str) -> None:
    await asyncio.ensure_future(engine.embedder.embed_queries([text]))


async def _tokenised_first(engine: MemoryEngine, text: str) -> None:
    engine.tokenizer.query_terms(text)
    await engine.embedder.embed_queries([text])


async def _tokenised_beside(engine: MemoryEngine, text: str) -> None:
    call = asyncio.ensure_future(engine.embedder.embed_queries([text]))
    await asyncio.sleep(0)  # the call reaches the model's thread
    engine.tokenizer.query_terms(text)
    await call


async def _round_trip_beside(engine: MemoryEngine, text: str) -> None:
    call = asyncio.ensure_future(engine.embedder.embed_queries([text]))
    await asyncio.sleep(0)
    await engine.db.ping()
    await call


async def _tokenised_first_round_trip_beside(engine: MemoryEngine, text: str) -> None:
    engine.tokenizer.query_terms(text)
    await _round_trip_beside(engine, text)


VARIANTS: dict[str, Variant] = {
    "alone": _alone,
    "behind ensure_future": _behind_a_future,
    "tokenised first": _tokenised_first,
    "tokenised beside": _tokenised_beside,
    "round trip beside": _round_trip_beside,
    "tokenised first, round trip beside": _tokenised_first_round_trip_beside,
}


class _Timed:
    """Wraps the local model's call in its worker thread and keeps its time and core count under a label."""

    def __init__(self) -> None:
        self.label = ""
        self.samples: dict[str, list[float]] = {}
        self.cores: dict[str, list[int]] = {}
        self._encode = local.LocalE5Embedder._encode

    def __enter__(self) -> _Timed:
        encode = self._encode

        def timed(embedder: local.LocalE5Embedder, texts: list[str], is_query: bool, granted: int,
                  ticket: object | None) -> Any:
            started = time.perf_counter()
            try:
                return encode(embedder, texts, is_query, granted, ticket)
            finally:
                self.samples.setdefault(self.label, []).append((time.perf_counter() - started) * 1000)
                self.cores.setdefault(self.label, []).append(granted)

        local.LocalE5Embedder._encode = timed  # type: ignore[method-assign, assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        local.LocalE5Embedder._encode = self._encode  # type: ignore[method-assign]


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    """Open the engine on an empty database; each question through every variant, rotating, after pauses."""
    config = bench_config(args)
    config = replace(config, embedding=replace(config.embedding, query_cache_size=0),
                     write=replace(config.write, tokenize_processes=0))
    texts = distinct_questions(load_pool().queries)
    random.Random(5).shuffle(texts)
    names = list(VARIANTS)
    async with database_url(config.database) as url, \
            open_engine(replace(config, database=replace(config.database, url=url))) as engine:
        for text in texts[:5]:  # warm-up: the model's pages, Kiwi, a pool connection
            await engine.embedder.embed_queries([text])
            engine.tokenizer.query_terms(text)
            await engine.db.ping()
        with _Timed() as timer:
            for i, text in enumerate(texts[:args.questions]):
                for name in names[i % len(names):] + names[:i % len(names)]:
                    await asyncio.sleep(PAUSE_S)
                    timer.label = name
                    await VARIANTS[name](engine, f"{text} ({name})")  # never a vector or terms cached
    out: dict[str, Any] = {name: percentiles(timer.samples[name]) for name in names}
    out["wide share"] = {name: sum(c > 1 for c in timer.cores[name]) / len(timer.cores[name]) for name in names}
    return out


def show(summary: dict[str, Any]) -> None:
    """Print the model's time by variant, and how often it ran on more than one core."""
    names = list(VARIANTS)
    print(f"the model's own call (ms), {int(summary['alone']['n'])} questions per variant, {PAUSE_S} s apart\n")
    print_latencies("variant", {name: summary[name] for name in names}, width=38)
    print("\nshare of calls on more than one core: "
          + ", ".join(f"{name} {summary['wide share'][name]:.0%}" for name in names))


def main() -> None:
    """Parse options, run, print, optionally write JSON."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--questions", type=int, default=90, help="questions, each asked once per variant")
    run_main(parser, main_async, show)


if __name__ == "__main__":
    main()
