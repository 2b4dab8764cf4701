"""Tokenising big batches in worker processes, each with its own Kiwi, so the server's GIL stays free.

Kiwi holds the GIL while it analyses: in a thread of the server process, a batch of long facts still delays every
other call, since the event loop only gets the GIL back between analyses. In another process it never competes for
this one's GIL (docs/decisions/tokenising-in-processes.md).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor

from npc_memory.text.tokenize import Analysis, TextOptions, Tokenizer

WORKER_NICENESS = 10
PARENT_CHECK_SECONDS = 0.5
_worker_tokenizer: Tokenizer | None = None
"""The Kiwi of a worker process, made once by its initializer."""


def _exit_with(parent: int) -> None:
    """End this worker once ``parent`` is gone (kill -9 included), checking every half second."""
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK_SECONDS)
    os._exit(0)


def _start_worker(options: TextOptions, niceness: int, parent: int) -> None:
    global _worker_tokenizer  # noqa: PLW0603  (one per worker process, made by the pool's initializer)
    # A worker holds both ends of the pool's queues, so a killed server never closes them: without this watch,
    # every kill -9 left its workers (~520 MiB each, and the server's stdout) behind.
    threading.Thread(target=_exit_with, args=(parent,), daemon=True, name="parent-watch").start()
    # Below the server process: when the cores are busy, the event loop (health checks, reads) runs first and a
    # batch's tokenising waits, not the other way round.
    os.nice(niceness)
    _worker_tokenizer = Tokenizer(options=options)


def _analyse_in_worker(texts: Sequence[str]) -> list[Analysis]:
    assert _worker_tokenizer is not None, "the pool's initializer makes the tokenizer"
    return [_worker_tokenizer.analyse(t) for t in texts]


def _ready() -> bool:
    return _worker_tokenizer is not None


class AnalysisPool:
    """Worker processes that analyse texts as ``Tokenizer.analyse`` does, with the same options."""

    def __init__(self, processes: int, options: TextOptions, min_chars: int) -> None:
        # spawn, not fork: the server process has gRPC and database threads a fork would copy mid-state.
        self._executor = ProcessPoolExecutor(
            max_workers=processes, mp_context=multiprocessing.get_context("spawn"),
            initializer=_start_worker, initargs=(options, WORKER_NICENESS, os.getpid()),
        )
        self.processes = processes
        self.min_chars = min_chars
        """Batches with fewer characters in all stay in a thread: a process round trip costs more than they do."""

    @classmethod
    async def start(cls, processes: int, options: TextOptions, min_chars: int) -> AnalysisPool:
        """A pool whose every worker has started and loaded Kiwi (seconds), so no request pays for it."""
        pool = cls(processes, options, min_chars)
        loop = asyncio.get_running_loop()
        # Submitted together, before any worker is idle, each call starts a worker of its own.
        await asyncio.gather(*(loop.run_in_executor(pool._executor, _ready) for _ in range(processes)))
        return pool

    def wants(self, texts: Sequence[str]) -> bool:
        """Whether ``texts`` are worth sending to the workers rather than analysing in a thread here."""
        return sum(len(t) for t in texts) >= self.min_chars

    async def analyse(self, texts: Sequence[str]) -> list[Analysis]:
        """Each text's analysis, in order; the texts split evenly over the workers."""
        if not texts:
            return []
        loop = asyncio.get_running_loop()
        step = -(-len(texts) // self.processes)
        chunks = [list(texts[i:i + step]) for i in range(0, len(texts), step)]
        parts = await asyncio.gather(*(loop.run_in_executor(self._executor, _analyse_in_worker, c) for c in chunks))
        return [a for part in parts for a in part]

    def shutdown(self) -> None:
        """Stop the workers (waiting for those mid-batch); queued work is cancelled."""
        self._executor.shutdown(wait=True, cancel_futures=True)
