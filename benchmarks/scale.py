"""What routing costs: a search and a store on one PostgreSQL beside the same on a Citus coordinator, in one run.

The single node is the embedded PostgreSQL; the cluster is ``scripts/citus up`` (a coordinator and two workers on
this machine, the same PostgreSQL build), a database of its own migrated by ``npc-memory migrate --citus``. Both
engines run with the service's defaults and callers' vectors (no embedder time in either figure), side by side in
one process: the rounds alternate between them, so a shared machine's drift falls on both.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from npc_memory.config import Config, DatabaseConfig, SearchConfig
from npc_memory.domain.model import ContentType, NewMemory, Scope, SearchQuery, Speaker, Subject, Vector, Weights
from npc_memory.embedding.settings import EmbeddingSettings
from npc_memory.engine import MemoryEngine
from npc_memory.server.runtime import open_engine

from benchmarks.__main__ import machine
from benchmarks.write import percentiles, texts, timed

ROOT = Path(__file__).resolve().parent.parent
CITUS = ROOT / "scripts" / "citus"
NPC_MEMORY = str(Path(sys.executable).with_name("npc-memory"))
DIM = 384


def vector(text: str) -> Vector:
    """A unit vector drawn from the text's hash: the same text, the same vector, on both backends."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
    raw = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return raw / np.linalg.norm(raw)


def fact(content: str) -> NewMemory:
    """A player's preference with the caller's vector."""
    return NewMemory(Speaker.USER, Subject.USER, "user", ContentType.PREFERENCE, content, embedding=vector(content))


def _citus(*args: str) -> str:
    done = subprocess.run([CITUS, *args], capture_output=True, text=True, timeout=300, check=True)
    return done.stdout.strip().rpartition("\n")[2]


@contextmanager
def cluster_database() -> Iterator[str]:
    """A fresh database on the running cluster (started if needed), migrated and spread by ``migrate --citus``."""
    _citus("up")
    name = f"npc_bench_{uuid.uuid4().hex[:10]}"
    url = _citus("createdb", name)
    try:
        env = {**os.environ, "NPC_MEMORY_DATABASE_URL": url, "NPC_MEMORY_EMBEDDER": "none",
               "NPC_MEMORY_EMBEDDING_DIM": str(DIM), "NPC_MEMORY_LOG_LEVEL": "ERROR"}
        subprocess.run([NPC_MEMORY, "migrate", "--citus"], env=env, check=True, capture_output=True, timeout=300)
        yield url
    finally:
        _citus("dropdb", name)


@asynccontextmanager
async def engine_on(url: str) -> AsyncIterator[MemoryEngine]:
    """The service's engine with callers' vectors on ``url`` (empty: a fresh embedded PostgreSQL)."""
    database = DatabaseConfig(url=url or None, data_dir=Path(tempfile.mkdtemp(prefix="npc-bench-")), pool_min=1,
                              pool_max=4)
    config = Config(database=database, embedding=EmbeddingSettings(kind="none", dim=DIM),
                    search=SearchConfig(keyword_backend="bm25"))
    async with open_engine(config) as engine:
        yield engine


async def seed(engine: MemoryEngine, scope: Scope, rows: int) -> None:
    """A played-in heroine: ``rows`` memories in batches of 64, then statistics as autovacuum leaves them."""
    contents = texts(rows, "시드")
    for start in range(0, rows, 64):
        await engine.store(scope, [fact(c) for c in contents[start:start + 64]])
    async with engine.db.connection() as conn:
        await conn.execute("ANALYZE")


async def measure(engines: dict[str, MemoryEngine], searches: int, stores: int, rounds: int,
                  scope_rows: int) -> dict[str, Any]:
    """Alternate rounds of searches on a seeded scope and single stores into a fresh one, per backend."""
    scope = Scope(f"bench-{uuid.uuid4().hex[:8]}", "letia")
    for engine in engines.values():
        await seed(engine, scope, scope_rows)
    questions = texts(searches, "질문")
    samples: dict[str, dict[str, list[float]]] = {name: {"search": [], "store": []} for name in engines}
    for r in range(rounds):
        for name, engine in engines.items():
            for q in questions:
                query = SearchQuery(scope=scope, text=q, limit=10, weights=Weights(), now=datetime.now(UTC),
                                    embedding=vector(q))
                samples[name]["search"].append(await timed(partial(engine.search, query)))
            fresh = Scope(f"bench-{uuid.uuid4().hex[:8]}", "letia")
            for c in texts(stores, f"저장{r}-"):
                samples[name]["store"].append(await timed(partial(engine.store, fresh, [fact(c)])))
    out: dict[str, Any] = {name: {kind: percentiles(ms) for kind, ms in kinds.items()}
                           for name, kinds in samples.items()}
    out["citus_over_single_p50"] = {kind: out["citus"][kind]["p50"] / out["single-node"][kind]["p50"]
                                    for kind in ("search", "store")}
    out["setup"] = {"searches_per_round": searches, "stores_per_round": stores, "rounds": rounds,
                    "scope_rows": scope_rows, "vectors": f"caller's, {DIM}-d", "cluster": "coordinator + 2 workers"}
    return out


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    """Start both backends, warm them, measure."""
    with cluster_database() as citus_url:
        async with engine_on("") as single, engine_on(citus_url) as citus:
            engines = {"single-node": single, "citus": citus}
            for engine in engines.values():
                await engine.store(Scope("bench-warmup", "letia"), [fact("준비 운동")])
            return await measure(engines, args.searches, args.stores, args.rounds, args.scope_rows)


def show(result: dict[str, Any]) -> None:
    """The table of the guide: p50 / p95 per backend and the ratio."""
    print(f"{'':<14}{'search p50':>12}{'search p95':>12}{'store p50':>11}{'store p95':>11}")
    for name in ("single-node", "citus"):
        r = result[name]
        print(f"{name:<14}{r['search']['p50']:>12.2f}{r['search']['p95']:>12.2f}"
              f"{r['store']['p50']:>11.2f}{r['store']['p95']:>11.2f}")
    ratio = result["citus_over_single_p50"]
    print(f"citus / single-node p50: search {ratio['search']:.2f}x, store {ratio['store']:.2f}x")


def main() -> None:
    """Parse options, run, print, optionally write JSON."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--searches", type=int, default=100, help="searches per backend per round")
    parser.add_argument("--stores", type=int, default=50, help="single stores per backend per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scope-rows", dest="scope_rows", type=int, default=300, help="memories in the searched scope")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    started = machine()
    result = asyncio.run(main_async(args))
    result["machine"] = started
    show(result)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
