"""The local embedder alone: one caller (latency) and many callers at once (throughput), old setting beside new.

    python -m benchmarks.embed_speed [--callers 8] [--seconds 8] [--lone 60] [--gap-ms 5] [--rounds 3] [--json F]

Designs compared in one process, on the same distinct Korean questions (the load test's and the quality set's),
without the query cache:

- ``today``: one OpenMP thread per call and one worker thread, the service's setting before this change
  (``embedding.threads = 1``);
- ``adaptive``: ``embedding.threads = 0``: a call alone runs on every core no other thread of the machine is
  running on, calls that overlap get one core each (``npc_memory.embedding.cores.CoreBudget``);
- ``adaptive, no idle probe``: the same, but a call alone takes every core even while other processes run (shows
  what the probe buys on a loaded machine).

Lone latency is measured in rounds that alternate the designs, so slow drift of a noisy machine falls on all of
them alike. Saturated throughput: ``--callers`` asyncio tasks call ``embed_queries`` flat out for ``--seconds``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from npc_memory.embedding.cores import CoreBudget
from npc_memory.embedding.local import LocalE5Embedder

from benchmarks.search_speed_parts import distinct_questions, percentiles
from loadtest import korean

DESIGNS = {"today": (1, True), "adaptive": (0, True), "adaptive, no idle probe": (0, False)}
BASELINE = "today"


async def lone(embedder: LocalE5Embedder, texts: Sequence[str], gap_ms: float = 0.0) -> list[float]:
    """One caller, one question at a time, ``gap_ms`` apart (a search's SQL runs there): milliseconds each."""
    out = []
    for text in texts:
        start = time.perf_counter()
        await embedder.embed_queries([text])
        out.append((time.perf_counter() - start) * 1000.0)
        await asyncio.sleep(gap_ms / 1000.0)
    return out


async def saturated(embedder: LocalE5Embedder, texts: Sequence[str], callers: int, seconds: float) -> dict[str, float]:
    """``callers`` tasks asking one question after another for ``seconds``: questions/s and latency."""
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds

    async def caller(offset: int) -> None:
        i = offset
        while time.perf_counter() < deadline:
            start = time.perf_counter()
            await embedder.embed_queries([texts[i % len(texts)]])
            latencies.append((time.perf_counter() - start) * 1000.0)
            i += callers

    started = time.perf_counter()
    await asyncio.gather(*(caller(k) for k in range(callers)))
    return {"per_s": len(latencies) / (time.perf_counter() - started), **percentiles(latencies)}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    """Every design, lone and saturated, interleaved in rounds."""
    texts = distinct_questions(korean.all_queries())
    embedders = {name: LocalE5Embedder(threads) for name, (threads, _probe) in DESIGNS.items()}
    for name, (_threads, probe) in DESIGNS.items():
        embedders[name].cores = CoreBudget(embedders[name].cores.total, probe)
    lone_ms: dict[str, list[float]] = {name: [] for name in embedders}
    sat: dict[str, list[dict[str, float]]] = {name: [] for name in embedders}
    try:
        for e in embedders.values():
            await lone(e, texts[:5])  # warm-up: pages of the model, worker threads, OpenMP pools
        for r in range(args.rounds):
            chunk = texts[(r * args.lone) % len(texts):][:args.lone]
            for name, e in embedders.items():
                lone_ms[name] += await lone(e, chunk, args.gap_ms)
            for name, e in embedders.items():
                sat[name].append(await saturated(e, texts, args.callers, args.seconds / args.rounds))
    finally:
        for e in embedders.values():
            await e.aclose()
    out: dict[str, Any] = {"callers": args.callers, "designs": {}}
    for name in embedders:
        runs = sat[name]
        total = sum(s["per_s"] for s in runs) / len(runs)
        out["designs"][name] = {"lone": percentiles(lone_ms[name]), "saturated_per_s": total,
                                "saturated_p50": sum(s["p50"] for s in runs) / len(runs),
                                "saturated_p95": max(s["p95"] for s in runs)}
    return out


def report(results: dict[str, Any]) -> str:
    """A markdown table, ratios against today's setting."""
    base = results["designs"][BASELINE]
    lines = [f"| design | lone p50 ms | lone p95 ms | lone p50 vs today | {results['callers']} callers: "
             "questions/s | vs today | p50 / p95 ms under load |", "|---|---:|---:|---:|---:|---:|---|"]
    for name, d in results["designs"].items():
        lines.append(
            f"| {name} | {d['lone']['p50']:.1f} | {d['lone']['p95']:.1f} | "
            f"{d['lone']['p50'] / base['lone']['p50']:.2f}x | {d['saturated_per_s']:.1f} | "
            f"{d['saturated_per_s'] / base['saturated_per_s']:.2f}x | "
            f"{d['saturated_p50']:.0f} / {d['saturated_p95']:.0f} |")
    return "\n".join(lines)


def main() -> None:
    """Parse options, run, print the table (and JSON)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--callers", type=int, default=8, help="concurrent callers for the saturated run")
    parser.add_argument("--seconds", type=float, default=8.0, help="saturated seconds per design, over all rounds")
    parser.add_argument("--lone", type=int, default=60, help="lone questions per design per round")
    parser.add_argument("--gap-ms", type=float, default=5.0,
                        help="pause between lone calls, where a search runs its SQL (idle OpenMP threads go to sleep)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    results = asyncio.run(run(args))
    machine = f"{platform.machine()}, {platform.processor() or 'cpu'}, Python {platform.python_version()}"
    results["machine"] = machine
    print(f"machine: {machine}\n\n{report(results)}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n", "utf-8")


if __name__ == "__main__":
    main()
