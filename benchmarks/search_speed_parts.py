"""Pieces of the search speed benchmark: a served database, request plans, timers and the exact top-10."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import numpy.typing as npt
import psycopg
from grpc_health.v1 import health_pb2, health_pb2_grpc
from npc_memory.domain.model import Scope, SearchQuery, Weights
from npc_memory.store.compiled import Compiled
from npc_memory.store.search_sql import compiled_search, search_params
from pgvector.psycopg import register_vector
from psycopg import RawCursor

QUALITY_DATASET = Path(__file__).parent / "quality" / "dataset.json"

EXACT_TOP = """
SELECT id, 1 - (embedding <=> %(embedding)s) AS cosine
FROM user_memories
WHERE user_id = %(user_id)s AND heroine_id = %(heroine_id)s
  AND valid_at <= %(at)s AND (invalid_at IS NULL OR invalid_at > %(at)s)
"""


@dataclass(frozen=True)
class Ask:
    """One search request of the plan: a scope, a query text and its real e5 vector."""

    user_id: str
    heroine_id: str
    text: str
    vector: npt.NDArray[np.float32]


def percentiles(samples_ms: Sequence[float]) -> dict[str, float]:
    """p50/p95/p99 and the mean, in milliseconds."""
    a = np.asarray(samples_ms)
    return {"p50": float(np.percentile(a, 50)), "p95": float(np.percentile(a, 95)),
            "p99": float(np.percentile(a, 99)), "mean": float(a.mean()), "n": float(len(a))}


def timed(calls: Sequence[Callable[[], Any]]) -> list[float]:
    """Run each call once, in order; milliseconds each."""
    out = []
    for call in calls:
        start = time.perf_counter()
        call()
        out.append((time.perf_counter() - start) * 1000.0)
    return out


def distinct_questions(pool_queries: Sequence[str]) -> list[str]:
    """Distinct Korean questions for the server-side embedding runs: the pool's and the quality set's."""
    data = json.loads(QUALITY_DATASET.read_text(encoding="utf-8"))
    texts = [q["text"] for s in data["scopes"] for q in s["questions"]]
    return list(dict.fromkeys([*pool_queries, *texts]))


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def first_of_each_scope(asks: Sequence[Ask]) -> list[Ask]:
    """One ask per scope, each scope's first: a warm-up that has every scope searched (and so held) once."""
    return list({(a.user_id, a.heroine_id): a for a in reversed(asks)}.values())


def before_pythonpath(tree: Path) -> str:
    """PYTHONPATH with an earlier tree's ``service/`` first (``--before-src``: that code's server)."""
    return os.pathsep.join(filter(None, [str(tree.resolve() / "service"), os.environ.get("PYTHONPATH", "")]))


@contextmanager
def served_process(url: str, log_path: Path, extra: Sequence[str] = (), env: dict[str, str] | None = None
                   ) -> Iterator[tuple[grpc.Channel, int]]:
    """``npc-memory serve`` on ``url`` (``extra`` flags, ``env`` added): a channel once SERVING, and its pid."""
    port = free_port()
    full_env = {**os.environ, "NPC_MEMORY_LOG_LEVEL": "WARNING", **(env or {})}
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "npc_memory.cli", "serve", "--database-url", url, "--host", "127.0.0.1",
             "--port", str(port), *extra], stdout=log, stderr=subprocess.STDOUT, env=full_env,
        )
        try:
            channel = grpc.insecure_channel(f"127.0.0.1:{port}")
            health = health_pb2_grpc.HealthStub(channel)
            deadline = time.monotonic() + 120
            while True:
                try:
                    if health.Check(health_pb2.HealthCheckRequest(), timeout=1).status == 1:
                        break
                except grpc.RpcError:
                    pass
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the server did not start; see {log_path}")
                time.sleep(0.5)
            yield channel, proc.pid
            channel.close()
        finally:
            proc.terminate()
            proc.wait(30)


@contextmanager
def served(url: str, log_path: Path, extra: Sequence[str] = ()) -> Iterator[grpc.Channel]:
    """``npc-memory serve`` in its own process on ``url`` (``extra`` flags added); a channel once SERVING."""
    with served_process(url, log_path, extra) as (channel, _pid):
        yield channel


class BareSql:
    """The service's search statement run straight through psycopg: the floor under the gRPC path.

    The keyword side is BM25: the benchmark's embedded PostgreSQL has no PGroonga, so the service resolves
    ``auto`` to BM25 there too.
    """

    def __init__(self, url: str, per_side: int) -> None:
        self._conn = psycopg.connect(url, autocommit=True)
        register_vector(self._conn)
        self._per_side = per_side
        self._now = datetime.now(UTC)

    def request(self, ask: Ask, terms: Sequence[str]) -> tuple[Compiled, dict[str, Any]]:
        """The statement and parameters for one request, chosen and built by the service's own functions."""
        query = SearchQuery(scope=Scope(ask.user_id, ask.heroine_id), text=ask.text, limit=10, weights=Weights(),
                            now=self._now, embedding=ask.vector)
        return compiled_search(query, terms, "bm25"), search_params(query, terms, self._per_side, "bm25")

    def run(self, request: tuple[Compiled, dict[str, Any]]) -> int:
        """Execute exactly as the service does (compiled to ``$n``, prepared, binary) and fetch the rows; how many."""
        statement, params = request
        with RawCursor(self._conn) as cur:
            cur.execute(statement.query, statement.args(params), prepare=True, binary=True)
            return len(cur.fetchall())

    def cosines(self, ask: Ask) -> dict[str, float]:
        """The cosine of every valid memory of the scope to the query (a plain exact scan)."""
        rows = self._conn.execute(EXACT_TOP, {"embedding": ask.vector, "user_id": ask.user_id,
                                              "heroine_id": ask.heroine_id, "at": self._now}).fetchall()
        return {str(r[0]): float(r[1]) for r in rows}

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()


def tie_aware_recall(returned: Sequence[str], cosines: dict[str, float], k: int = 10) -> float:
    """Share of the exact top-k the search returned; a row tied with the k-th best cosine counts as exact.

    Seeded scopes repeat sentences (same vector), so ties at the k-th place are common and either is right.
    """
    exact = sorted(cosines.values(), reverse=True)[:k]
    if not exact:
        return 1.0
    kth = exact[-1]
    good = sum(1 for i in returned[: len(exact)] if cosines.get(i, -2.0) >= kth - 1e-6)
    return good / len(exact)
