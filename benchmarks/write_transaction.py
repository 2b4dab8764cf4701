"""The store's transaction, ours (store/pipelined.py) against psycopg's transaction() in a pipeline, one run.

    python -m benchmarks.write_transaction [--stores 400] [--loop asyncio|uvloop] [--json out.json]

One in-process engine on a fresh embedded PostgreSQL stores single facts with callers' vectors (the pool's real e5
passage vectors, new texts), the transaction's form alternating in pairs (ABBA) between the two: psycopg's
``transaction()`` inside the pipeline, as ``store_memories`` wrote it before (five syncs a store: BEGIN alone, the
reads, the INSERT, COMMIT and a last one), and ours (BEGIN with the reads, the writes with COMMIT: two). Each store
follows a 2 ms pause. Printed: p50 / p95 / mean per form (the first 20 stores of each left out) and their ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import uvloop
from npc_memory.domain.model import ContentType, NewMemory, Scope, Speaker, Subject
from npc_memory.runtime import open_engine
from npc_memory.store import writes
from npc_memory.store.pipelined import pipelined_transaction
from npc_memory.store.pool import Connection

from benchmarks.harness import caller_vector_config, emit
from benchmarks.search_speed_parts import percentiles
from loadtest.pool import load_pool

WARM = 20


@asynccontextmanager
async def psycopg_transaction(conn: Connection) -> AsyncIterator[None]:
    """The form before: psycopg's transaction() inside a pipeline."""
    async with conn.pipeline(), conn.transaction():
        yield


FORMS: dict[str, Callable[[Connection], AbstractAsyncContextManager[None]]] = {
    "psycopg transaction()": psycopg_transaction, "pipelined (ours)": pipelined_transaction}


async def run(stores: int) -> dict[str, Any]:
    """``stores`` single stores, the forms alternating; percentiles per form."""
    pool = load_pool()
    times: dict[str, list[float]] = {name: [] for name in FORMS}
    names = list(FORMS)
    async with open_engine(caller_vector_config("", pool.dim)) as engine:
        scope = Scope("write-transaction-bench", "letia")
        try:
            for i in range(stores):
                name = names[(i + i // 2) % 2]
                vars(writes)["pipelined_transaction"] = FORMS[name]  # the name store_memories calls
                k = i % len(pool.passages)
                fact = NewMemory(speaker=Speaker.USER, subject=Subject.USER, subject_id="bench",
                                 content_type=ContentType.FACT, content=f"{pool.passages[k]} ({i})",
                                 embedding=pool.passage_vectors[k])
                await asyncio.sleep(0.002)
                start = time.perf_counter()
                await engine.store(scope, [fact])
                times[name].append((time.perf_counter() - start) * 1000.0)
        finally:
            vars(writes)["pipelined_transaction"] = pipelined_transaction
    figures = {name: percentiles(v[WARM:]) for name, v in times.items()}
    return {"stores": stores, "figures": figures,
            "ours / psycopg p50": figures["pipelined (ours)"]["p50"] / figures["psycopg transaction()"]["p50"]}


def main() -> None:
    """Parse, run on the loop asked, print."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stores", type=int, default=400)
    parser.add_argument("--loop", choices=("asyncio", "uvloop"), default="uvloop")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    result = (uvloop.run if args.loop == "uvloop" else asyncio.run)(run(args.stores))
    result["loop"] = args.loop
    emit(result, args.json)


if __name__ == "__main__":
    main()
