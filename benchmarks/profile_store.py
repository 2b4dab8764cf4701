"""Where a single store's time goes: py-spy samples of the engine storing one fact at a time, grouped by part.

    python -m benchmarks.profile_store [--stores 600] [--scope-rows 300] [--text] [--raw out.txt]

In this process: an embedded PostgreSQL in a fresh directory, the service's engine (MemoryEngine.store: duplicate
check, slot supersession, insert, one transaction), a scope pre-filled like benchmarks.write's. Then ``--stores``
single facts are stored one after another (caller vectors; ``--text``: the engine embeds each) while ``py-spy
record`` samples this process (on-CPU samples only, all threads). Printed: the store's wall p50/p95, this
process's CPU ms per store (user + system, all threads; PostgreSQL's CPU is not in it), and the share of samples
in each part of the path. py-spy is pinned in the dev dependencies.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import tempfile
import time
import uuid
from dataclasses import replace
from pathlib import Path

from npc_memory.config import Config, DatabaseConfig
from npc_memory.domain.model import Scope
from npc_memory.server.runtime import open_engine

from benchmarks.sampling import grouped, py_spy, share_table
from benchmarks.search_speed_parts import percentiles
from benchmarks.write import fact, seed, texts

# The first group any frame of a stack (innermost first) belongs to; the last takes what is left.
GROUPS = (
    ("psycopg: statement placeholders parsed", ("_query2pg", "_split_query", "PostgresQuery.convert", "as_bytes")),
    ("psycopg: send, wait, fetch, row making", ("psycopg/", "psycopg_pool/", "pgvector/")),
    ("thread hand-offs (to_thread, executors)", ("asyncio/threads.py", "concurrent/futures", "run_in_executor")),
    ("model (embedding)", ("embedding/",)),
    ("tokenising the fact", ("text/", "kiwipiepy")),
    ("write planning (domain)", ("domain/",)),
    ("engine and store code", ("engine/memory.py", "store/")),
)
REST = "event loop (asyncio, selectors) and other"


async def run(args: argparse.Namespace) -> None:
    """Profile on a fresh embedded database, removed afterwards."""
    data_dir = Path(tempfile.mkdtemp(prefix="npc-profile-store-"))
    database = DatabaseConfig(url=None, data_dir=data_dir, pool_min=1, pool_max=4)
    try:
        await profile(args, database)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)  # a fresh database each run: nothing to keep


async def profile(args: argparse.Namespace, database: DatabaseConfig) -> None:
    """Store one fact at a time under py-spy on a fresh database, print the table."""
    async with open_engine(replace(Config(), database=database)) as engine:
        scope = Scope(f"profile-{uuid.uuid4().hex[:8]}", "letia")
        await seed(engine, scope, args.scope_rows)
        contents = texts(args.stores + 30, "프")
        vectors = [None] * len(contents) if args.text else list(await engine.embedder.embed_passages(contents))
        facts = [fact(i, c, v) for i, (c, v) in enumerate(zip(contents, vectors, strict=True))]
        for f in facts[:30]:
            await engine.store(scope, [f])
        spy = await asyncio.create_subprocess_exec(
            py_spy(), "record", "--pid", str(os.getpid()), "--rate", "200", "--format", "raw",
            "--output", str(args.raw), "--nonblocking")
        await asyncio.sleep(1.5)  # py-spy attaches
        wall: list[float] = []
        cpu0 = time.process_time()
        for f in facts[30:]:
            start = time.perf_counter()
            await engine.store(scope, [f])
            wall.append((time.perf_counter() - start) * 1000)
        cpu_ms = (time.process_time() - cpu0) * 1000 / len(wall)
        spy.send_signal(signal.SIGINT)  # py-spy writes its samples on an interrupt
        await spy.wait()
    total, counts = grouped(args.raw, GROUPS, REST)
    p = percentiles(wall)
    kind = "text (the engine embeds)" if args.text else "caller vector"
    print(f"single stores, {kind}: {len(wall)} stores, wall p50 {p['p50']:.2f} ms, p95 {p['p95']:.2f} ms; "
          f"this process's CPU {cpu_ms:.2f} ms per store; {total} py-spy samples in the store\n")
    print(share_table("store path", total, counts, GROUPS, REST))


def main() -> None:
    """Parse options and run."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stores", type=int, default=600)
    parser.add_argument("--scope-rows", dest="scope_rows", type=int, default=300)
    parser.add_argument("--text", action="store_true", help="the engine embeds each fact (no caller vector)")
    parser.add_argument("--raw", type=Path, default=Path(tempfile.gettempdir()) / "npc-profile-store.txt")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
