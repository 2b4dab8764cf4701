"""The floor: the service's own search SQL run bare through psycopg, no gRPC, no embedder.

The same call the engine makes (``store.search.search_ranked``: one statement, its candidates scored by
domain/scoring.py, with the keyword backend the server would pick on that database) with the same query vectors
and terms as the Locust searches, at a fixed concurrency, so the benchmark can report how far the service is
above what PostgreSQL alone costs.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np
from npc_memory.config import Config, SearchConfig
from npc_memory.config.database import PoolSettings
from npc_memory.domain.model import Scope, SearchQuery, Weights
from npc_memory.server.runtime import resolve_backend
from npc_memory.store.pool import Database
from npc_memory.store.search import search_ranked
from npc_memory.store.search_pgroonga import pgroonga_available
from npc_memory.text import Tokenizer

from loadtest import korean
from loadtest.pool import Pool
from loadtest.seed import ScopeInfo


@dataclass
class FloorResult:
    """Latencies (ms) of bare searches, with the scope size each ran on."""

    samples: list[tuple[int, float]] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def rps(self) -> float:
        """Searches per second."""
        return len(self.samples) / self.seconds if self.seconds else 0.0

    def percentile(self, q: float, low: int = 0, high: int = 1 << 30) -> float:
        """The q-th percentile latency (ms) over scopes of ``low`` to ``high`` rows."""
        values = [ms for rows, ms in self.samples if low <= rows <= high]
        return float(np.percentile(values, q)) if values else float("nan")


async def run_floor(
    url: str, scopes: list[ScopeInfo], pool: Pool, concurrency: int, seconds: float, seed: int = 7
) -> FloorResult:
    """Run bare searches from ``concurrency`` workers for ``seconds``; every worker has its own connection."""
    tokenizer = Tokenizer()
    terms = {q: tokenizer.terms(q) for q in pool.queries}
    db = Database(url, PoolSettings(min_size=concurrency, max_size=concurrency))
    await db.open()
    backend = resolve_backend(Config().search.keyword_backend, await pgroonga_available(db))
    per_side = SearchConfig().candidates
    result = FloorResult()
    deadline = time.perf_counter() + seconds

    async def worker(n: int) -> None:
        rng = random.Random(seed * 1000 + n)
        while time.perf_counter() < deadline:
            info = rng.choice(scopes)
            choices = [q for q in korean.queries(info.heroine_id) if q in terms] or pool.queries
            text = rng.choice(choices)
            query = SearchQuery(
                scope=Scope(info.user_id, info.heroine_id), text=text, limit=10, weights=Weights(),
                now=datetime.now(UTC), embedding=pool.query_vectors[pool.queries.index(text)],
            )
            start = time.perf_counter()
            await search_ranked(db, query, terms[text], per_side, backend)
            result.samples.append((info.rows, (time.perf_counter() - start) * 1000.0))

    started = time.perf_counter()
    try:
        await asyncio.gather(*(worker(n) for n in range(concurrency)))
    finally:
        result.seconds = time.perf_counter() - started
        await db.close()
    return result
