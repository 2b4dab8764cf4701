"""Where a batch's tokenising is cheaper: a thread of the server process, or a worker process round trip.

    python -m benchmarks.tokenize_pool [--repeats 20]

For batches from one short fact to 16 facts of 2,000 characters, the median wall time of analysing the batch in a
thread (``asyncio.to_thread``, as ``tokenize_processes = 0`` does) and in one worker process (``AnalysisPool``),
measured alternately in one run. Distinct texts each time, so neither side's cache answers. The pool's threshold
(``tokenize_process_min_chars``, 4,000) sits where the process stops costing more than it saves the event loop.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import uuid

from npc_memory.text import TextOptions, Tokenizer
from npc_memory.text.process_pool import AnalysisPool

from benchmarks.stall import long_fact

SHAPES = [(1, 40), (1, 500), (1, 2000), (2, 2000), (4, 2000), (16, 2000)]


def texts(count: int, chars: int) -> list[str]:
    """``count`` distinct Korean texts of ``chars`` characters."""
    salt = uuid.uuid4().hex[:6]
    return [long_fact(i, salt)[:chars] for i in range(count)]


async def main_async(repeats: int) -> None:
    """Time both ways for each batch shape and print medians and their ratio."""
    tokenizer = Tokenizer(options=TextOptions())
    pool = await AnalysisPool.start(1, TextOptions(), min_chars=0)
    try:
        print(f"{'batch':>16}  {'thread':>10}  {'process':>10}  process/thread")
        for count, chars in SHAPES:
            thread_ms: list[float] = []
            process_ms: list[float] = []
            for _ in range(repeats):
                batch = texts(count, chars)
                started = time.perf_counter()
                await asyncio.to_thread(lambda b=batch: [tokenizer.analyse(t) for t in b])  # type: ignore[misc]
                thread_ms.append((time.perf_counter() - started) * 1000)
                batch = texts(count, chars)
                started = time.perf_counter()
                await pool.analyse(batch)
                process_ms.append((time.perf_counter() - started) * 1000)
            t, p = statistics.median(thread_ms), statistics.median(process_ms)
            print(f"{count:>4} x {chars:>5} ch  {t:8.2f} ms  {p:8.2f} ms  {p / t:6.2f}x")
    finally:
        pool.shutdown()


def main() -> None:
    """Parse flags and run."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=20)
    asyncio.run(main_async(parser.parse_args().repeats))


if __name__ == "__main__":
    main()
