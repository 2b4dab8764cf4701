"""Where a lone text store's time goes, step by step, in-process on the service's loop, beside the embedder alone.

    python -m benchmarks.store_phases [--stores 130] [--pause 0.25] [--json out.json]

A fresh embedded PostgreSQL, the service's engine on uvloop (as ``npc-memory serve`` runs it; ``embedding.threads``
as configured, 0 by default: a lone call on every core), one scope. Each single store of a new line (the engine
embeds it) comes after a player's pause, and so does the embedder alone on the same line, taking turns. Timers wrap
the engine's own steps (the service's code is unchanged; the wrappers only note the time): Kiwi's analysis of the
line, the write transaction's start, each pipeline sync (``pipeline_sync``, which sends the queued statements, then
the flush), the model's call, the transaction's last answers (``settle``: the writes and the COMMIT) and the end.

Printed: the store's and the embedder's p50, and for each step in the order a store takes them, the median and mean
milliseconds since the step before. A step that is not always in the same place (a store on another path) is
counted where it happened, so a row's ``n`` below ``--stores`` says so.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from npc_memory.config import Config, DatabaseConfig
from npc_memory.domain.model import Scope, Vector
from npc_memory.engine import memory as engine_module
from npc_memory.ops.loop import run
from npc_memory.server.runtime import open_engine
from npc_memory.store import pipelined, writes

from benchmarks.write import fact, texts

WARM = 10


def _swap(owner: Any, name: str, timed: Callable[[Any], Any]) -> None:
    """Replace ``owner.name`` with ``timed(original)`` (the service's code calls it by that name)."""
    setattr(owner, name, timed(getattr(owner, name)))


class Steps:
    """The moments of one store, in order: (step, perf_counter)."""

    def __init__(self) -> None:
        self.marks: list[tuple[str, float]] = []

    def mark(self, step: str) -> None:
        """Note that ``step`` was reached now."""
        self.marks.append((step, time.perf_counter()))


def instrument(steps: Steps) -> None:
    """Wrap the write path's steps in this process with timers (they call the originals)."""
    mark = steps.mark

    def early(original: Any) -> Any:
        def timed_early(*args: Any, **kwargs: Any) -> Any:
            analyses = original(*args, **kwargs)
            if analyses is None:
                return None

            def analysed() -> Any:
                mark("Kiwi starts")
                out = analyses()
                mark("Kiwi done")
                return out
            return analysed
        return timed_early

    def store(original: Any) -> Any:
        async def timed_store(*args: Any, **kwargs: Any) -> Any:
            mark("the write transaction is called")
            return await original(*args, **kwargs)
        return timed_store

    def transaction(original: Any) -> Any:
        @asynccontextmanager
        async def timed_transaction(conn: Any) -> AsyncIterator[pipelined.Pipeline]:
            mark("a connection is had")
            async with original(conn) as pipe:
                yield pipe
                mark("the block queued its writes")
            mark("committed")
        return timed_transaction

    _swap(engine_module, "early_analyses", early)
    _swap(writes, "store_memories", store)
    _swap(pipelined, "pipelined_transaction", transaction)

    def send_sync(original: Any) -> Any:
        def timed_send(self: pipelined.Pipeline) -> None:
            mark("a sync: statements queued")
            original(self)
            mark("a sync: pipeline_sync (the send)")
        return timed_send

    def flush(original: Any) -> Any:
        async def timed_flush(self: pipelined.Pipeline) -> None:
            await original(self)
            mark("a sync: flushed")
        return timed_flush

    def settle(original: Any) -> Any:
        async def timed_settle(self: pipelined.Pipeline) -> None:
            mark("the last answers are awaited")
            await original(self)
            mark("the last answers are in (writes, COMMIT)")
        return timed_settle

    _swap(pipelined.Pipeline, "_send_sync", send_sync)
    _swap(pipelined.Pipeline, "_flush", flush)
    _swap(pipelined.Pipeline, "settle", settle)


def wrap_model(steps: Steps, embed: Callable[[Sequence[str]], Any]) -> Callable[[Sequence[str]], Any]:
    """``embed`` with a timer on each side."""
    async def timed(texts_: Sequence[str]) -> list[Vector]:
        steps.mark("the model is called")
        out: list[Vector] = await embed(texts_)
        steps.mark("the model answered")
        return out
    return timed


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Store ``--stores`` lines one at a time after pauses, the embedder alone between them; the steps' times."""
    data_dir = Path(tempfile.mkdtemp(prefix="npc-store-phases-"))
    steps = Steps()
    instrument(steps)
    try:
        config = replace(Config(), database=DatabaseConfig(url=None, data_dir=data_dir, pool_min=1, pool_max=4))
        async with open_engine(config) as engine:
            alone = engine.embedder.embed_passages
            _swap(engine.embedder, "embed_passages", partial(wrap_model, steps))
            scope = Scope(f"phases-{uuid.uuid4().hex[:8]}", "store")
            lines = texts(args.stores + WARM, "단계")
            for line in lines[:WARM]:
                await engine.store(scope, [fact(0, line)])
            store_ms: list[float] = []
            alone_ms: list[float] = []
            by_place: dict[int, dict[str, list[float]]] = {}
            for line in lines[WARM:]:
                await asyncio.sleep(args.pause)
                start = time.perf_counter()
                await alone([f"{line} (alone)"])
                alone_ms.append((time.perf_counter() - start) * 1000)
                await asyncio.sleep(args.pause)
                steps.marks.clear()
                steps.mark("the store is called")
                await engine.store(scope, [fact(1, line)])
                steps.mark("the store returned")
                store_ms.append((steps.marks[-1][1] - steps.marks[0][1]) * 1000)
                for place, ((_, before), (step, at)) in enumerate(zip(steps.marks, steps.marks[1:], strict=False)):
                    by_place.setdefault(place, {}).setdefault(step, []).append((at - before) * 1000)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)  # a fresh database each run: nothing to keep
    rows = [{"place": place, "step": step, "n": len(ms), "p50": statistics.median(ms), "mean": statistics.fmean(ms)}
            for place, found in sorted(by_place.items()) for step, ms in found.items()]
    return {"stores": args.stores, "pause_s": args.pause, "store_p50": statistics.median(store_ms),
            "embedder_alone_p50": statistics.median(alone_ms), "steps": rows}


def show(summary: dict[str, Any]) -> None:
    """The table."""
    gap = summary["store_p50"] - summary["embedder_alone_p50"]
    print(f"lone text stores, {summary['stores']} after {summary['pause_s']} s pauses: store p50 "
          f"{summary['store_p50']:.2f} ms, the embedder alone p50 {summary['embedder_alone_p50']:.2f} ms "
          f"({gap:+.2f})\n")
    print("| # | step reached | n | ms since the step before, p50 | mean |\n|---:|---|---:|---:|---:|")
    for row in summary["steps"]:
        print(f"| {row['place'] + 1} | {row['step']} | {row['n']} | {row['p50']:.3f} | {row['mean']:.3f} |")


def main() -> None:
    """Parse options, measure on uvloop, print, write."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stores", type=int, default=130)
    parser.add_argument("--pause", type=float, default=0.25, help="seconds before each store and each model call")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    summary = run(measure(args), "uvloop")
    show(summary)
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
