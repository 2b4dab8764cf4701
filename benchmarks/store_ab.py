"""The store's own cost in two trees side by side: caller-vector searches and stores, no model, no gRPC.

    python -m benchmarks.store_ab --old DIR --new DIR [--blocks 30] [--json out.json]

Each tree's service runs in a process of its own (its ``service/`` first on ``PYTHONPATH``) on an embedded
PostgreSQL of its own: a held scope of 2,000 rows with 384-dimension vectors, and a scope of 100 to write to. Once
both are warm, blocks of calls alternate between them (50 searches, 40 single stores, 5 stores of 32; which tree
goes first alternates too), so a shared machine's drift falls on both. Reported per kind: the p50 wall time of
each tree, the median and quartiles of the blocks' new/old ratio, the process CPU per call, and the old tree's
first half against its second (the run's own drift).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from npc_memory.config import Config, DatabaseConfig
from npc_memory.domain.model import ContentType, NewMemory, Scope, SearchQuery, Speaker, Subject, Weights
from npc_memory.embedding.base import normalise
from npc_memory.server.runtime import open_engine

T0 = datetime(2026, 1, 1, tzinfo=UTC)
DIM = 384
PLAN = (("search", 50), ("store", 40), ("batch", 5))


def _facts(rng: np.random.Generator, n: int, salt: str, start: int = 0) -> list[NewMemory]:
    vectors = normalise(rng.standard_normal((n, DIM)).astype(np.float32))
    return [NewMemory(speaker=Speaker.USER, subject=Subject.USER, subject_id="player", content_type=ContentType.FACT,
                      content=f"{salt} 사실 {start + i} 바다 고양이 {i % 37}", importance=1 + i % 9,
                      valid_at=T0 + timedelta(minutes=start + i), embedding=vectors[i]) for i in range(n)]


async def worker() -> None:
    """One tree's engine: answers ``KIND N`` lines on stdin with the N calls' wall and CPU seconds as JSON."""
    config = replace(Config(), database=DatabaseConfig(data_dir=Path(tempfile.mkdtemp(prefix="npc-ab-")),
                                                       pool_min=1, pool_max=4))
    config = replace(config, embedding=replace(config.embedding, kind="none", dim=DIM))
    rng = np.random.default_rng(7)
    async with open_engine(config) as engine:
        scope, written = Scope(f"ab-{uuid.uuid4().hex[:6]}", "letia"), Scope(f"abw-{uuid.uuid4().hex[:6]}", "letia")
        for start in range(0, 2000, 200):
            await engine.store(scope, _facts(rng, 200, "s", start))
        await engine.store(written, _facts(rng, 100, "w"))
        queries = normalise(rng.standard_normal((64, DIM)).astype(np.float32))
        count = 0

        async def call(kind: str) -> None:
            nonlocal count
            count += 1
            if kind == "search":
                await engine.search(SearchQuery(scope=scope, text="", limit=10, weights=Weights(),
                                                now=T0 + timedelta(days=30), embedding=queries[count % 64]))
            else:
                n = 1 if kind == "store" else 32
                await engine.store(written, _facts(rng, n, f"{kind}{count}", 10_000 + 32 * count))

        for kind, n in (("search", 60), ("store", 20), ("batch", 3)):  # the scope held, statements prepared
            for _ in range(n):
                await call(kind)
        print("ready", flush=True)
        loop = asyncio.get_running_loop()
        while line := await loop.run_in_executor(None, sys.stdin.readline):
            kind, n = line.split()
            wall: list[float] = []
            cpu: list[float] = []
            for _ in range(int(n)):
                c, t = time.process_time(), time.perf_counter()
                await call(kind)
                wall.append(time.perf_counter() - t)
                cpu.append(time.process_time() - c)
            print(json.dumps({"wall": wall, "cpu": cpu}), flush=True)


def _start(root: Path) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root / "service"), str(root / "clients" / "python"),
                                                       str(Path(__file__).resolve().parent.parent)]))
    process = subprocess.Popen([sys.executable, "-m", "benchmarks.store_ab", "--worker"], env=env, text=True,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert process.stdout is not None
    while process.stdout.readline().strip() != "ready":
        if process.poll() is not None:
            raise SystemExit(f"the worker of {root} ended")
    return process


def compare(old: Path, new: Path, blocks: int) -> dict[str, Any]:
    """Alternate blocks of calls between the two trees' workers; the figures per kind."""
    workers = {"old": _start(old), "new": _start(new)}
    samples: dict[tuple[str, str], dict[str, list[float]]] = {
        (k, t): {"wall": [], "cpu": [], "blocks": []} for k, _ in PLAN for t in workers}
    for b in range(blocks):
        for kind, n in PLAN:
            for tree in ("old", "new") if b % 2 == 0 else ("new", "old"):
                process = workers[tree]
                assert process.stdin is not None
                assert process.stdout is not None
                process.stdin.write(f"{kind} {n}\n")
                process.stdin.flush()
                got = json.loads(process.stdout.readline())
                kept = samples[(kind, tree)]
                kept["wall"] += got["wall"]
                kept["cpu"] += got["cpu"]
                kept["blocks"].append(statistics.median(got["wall"]))
    for process in workers.values():
        assert process.stdin is not None
        process.stdin.close()
        process.wait()
    out: dict[str, Any] = {"old": str(old), "new": str(new), "blocks": blocks}
    for kind, _ in PLAN:
        base, other = samples[(kind, "old")], samples[(kind, "new")]
        ratios = [nb / ob for ob, nb in zip(base["blocks"], other["blocks"], strict=True)]
        half = blocks // 2
        out[kind] = {
            "calls_each": len(base["wall"]),
            "old_p50_ms": statistics.median(base["wall"]) * 1e3, "new_p50_ms": statistics.median(other["wall"]) * 1e3,
            "block_ratio_median": statistics.median(ratios), "block_ratio_quartiles": statistics.quantiles(ratios, n=4),
            "old_cpu_ms": statistics.mean(base["cpu"]) * 1e3, "new_cpu_ms": statistics.mean(other["cpu"]) * 1e3,
            "old_first_half_over_second":
                statistics.median(base["blocks"][:half]) / statistics.median(base["blocks"][half:]),
        }
    return out


def main() -> None:
    """Parse options; run the comparison (or, with ``--worker``, one tree's side of it)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--old", type=Path, help="the tree measured as the base (a checkout's root)")
    parser.add_argument("--new", type=Path, help="the tree measured against it")
    parser.add_argument("--blocks", type=int, default=30, help="alternations of the plan's blocks")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    if args.worker:
        asyncio.run(worker())
        return
    if args.old is None or args.new is None:
        parser.error("--old and --new are required")
    result = compare(args.old.resolve(), args.new.resolve(), args.blocks)
    print(json.dumps(result, indent=1))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
