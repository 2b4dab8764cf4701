"""Benchmark runner: how the scoring path's cost grows with the number of rows, in one run.

    python -m loadtest.bench --scales 10000,100000,1000000 --users 32 --duration 60 --out bench-out

Starts PostgreSQL (embedded in a data directory under /tmp, or ``--database-url``) and ``npc-memory serve`` on it,
then for each scale (ascending, rows added on top of the previous scale): seeds with binary COPY, runs Locust
headless at a fixed concurrency for each vector mode, runs the same searches bare against PostgreSQL (the floor),
and samples the service's RSS. Writes results.json, results.csv, results.md and PNG plots into ``--out``.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import math
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from loadtest.floor import FloorResult, run_floor
from loadtest.pool import load_pool
from loadtest.seed import ScopeInfo, seed, write_manifest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
BUCKETS = ((100, 250), (251, 500), (501, 1000), (1001, 2000))
PERCENTILES = (50, 95, 99)


@dataclass
class Service:
    """``npc-memory serve`` as a subprocess, with an RSS sampler."""

    proc: subprocess.Popen[str]
    port: int
    rss: list[float] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    @classmethod
    def start(cls, url: str, log: Path, extra: list[str]) -> Service:
        """Start it and wait for its start-up line."""
        with log.open("w") as err:
            proc = subprocess.Popen(
                [str(BIN / "npc-memory"), "serve", "--port", "0", "--host", "127.0.0.1", "--database-url", url, *extra],
                stdout=subprocess.PIPE, stderr=err, text=True,
            )
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("npc-memory serving on port "):
                return cls(proc, int(line.rsplit(" ", 1)[1]))
        raise RuntimeError(f"service did not start; see {log}")

    def sample_rss(self) -> threading.Thread:
        """Sample RSS (MiB) every second until ``stop_sampling``."""
        self._stop.clear()
        self.rss = []
        ps = psutil.Process(self.proc.pid)

        def loop() -> None:
            while not self._stop.wait(1.0):
                self.rss.append(ps.memory_info().rss / 2**20)

        thread = threading.Thread(target=loop, daemon=True)
        thread.start()
        return thread

    def stop_sampling(self) -> None:
        """Stop the RSS sampler."""
        self._stop.set()

    def stop(self) -> None:
        """SIGTERM, then wait."""
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _locust(
    port: int, manifest: Path, vectors: str, users: int, duration: int, prefix: Path, processes: int,
    profiles: list[str],
) -> dict[str, dict[str, str]]:
    cmd = [str(BIN / "locust"), "-f", str(ROOT / "loadtest" / "locustfile.py"), "--host", f"127.0.0.1:{port}",
           "--headless", "-u", str(users), "-r", str(users), "-t", f"{duration}s", "--stop-timeout", "10",
           "--csv", str(prefix), "--only-summary", "--scopes-file", str(manifest), "--vectors", vectors,
           "--samples-file", str(prefix) + "-samples", "--exit-code-on-error", "0"]
    if processes > 1:
        cmd += ["--processes", str(processes)]
    subprocess.run([*cmd, *profiles], check=True, capture_output=True, timeout=duration + 300)
    with Path(f"{prefix}_stats.csv").open(newline="", encoding="utf-8") as fh:
        return {row["Name"]: row for row in csv.DictReader(fh)}


def _samples(prefix: Path) -> list[tuple[str, int, float, int]]:
    out = []
    for path in prefix.parent.glob(prefix.name + "-samples.*.csv"):
        with path.open(newline="", encoding="utf-8") as fh:
            out += [(r["rpc"], int(r["scope_rows"]), float(r["ms"]), int(r["ok"])) for r in csv.DictReader(fh)]
    return out


def _pct(values: list[float]) -> dict[str, float]:
    if not values:
        return {f"p{q}": math.nan for q in PERCENTILES}
    return {f"p{q}": float(np.percentile(values, q)) for q in PERCENTILES}


def _run_summary(stats: dict[str, dict[str, str]], samples: list[tuple[str, int, float, int]],
                 seconds: float) -> dict[str, Any]:
    """Per RPC: count, failures, RPS and exact percentiles from the raw samples; per scope-size bucket too."""
    out: dict[str, Any] = {}
    by_rpc: dict[str, list[tuple[int, float, int]]] = defaultdict(list)
    for rpc, rows, ms, ok in samples:
        by_rpc[rpc].append((rows, ms, ok))
    for rpc, calls in by_rpc.items():
        row = stats.get(rpc, {})
        entry: dict[str, Any] = {
            "requests": len(calls),
            "failures": sum(1 for _, _, ok in calls if not ok),
            "rps": float(row.get("Requests/s", len(calls) / seconds)),
            **_pct([ms for _, ms, _ in calls]),
            "by_scope": {},
        }
        for low, high in BUCKETS:
            entry["by_scope"][f"{low}-{high}"] = _pct([ms for n, ms, _ in calls if low <= n <= high])
        out[rpc] = entry
    return out


def _floor_summary(floor: FloorResult) -> dict[str, Any]:
    return {
        "rps": floor.rps,
        **{f"p{q}": floor.percentile(q) for q in PERCENTILES},
        "by_scope": {f"{lo}-{hi}": {f"p{q}": floor.percentile(q, lo, hi) for q in PERCENTILES} for lo, hi in BUCKETS},
    }


def _plots(results: list[dict[str, Any]], out: Path) -> list[Path]:
    import matplotlib as mpl

    mpl.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    modes = sorted({m for r in results for m in r["runs"]})
    rows = [r["rows"] for r in results]
    fig, (ax_rps, ax_lat) = plt.subplots(1, 2, figsize=(12, 4.5))
    for mode in modes:
        for rpc in ("SearchMemories", "StoreMemories"):
            rps = [r["runs"].get(mode, {}).get(rpc, {}).get("rps", math.nan) for r in results]
            ax_rps.plot(rows, rps, marker="o", label=f"{rpc} ({mode} vectors)")
            for q, style in zip(PERCENTILES, ("-", "--", ":"), strict=True):
                lat = [r["runs"].get(mode, {}).get(rpc, {}).get(f"p{q}", math.nan) for r in results]
                ax_lat.plot(rows, lat, style, marker="o", label=f"{rpc} p{q} ({mode})")
    ax_rps.plot(rows, [r["floor"]["rps"] for r in results], "k-.", marker="s", label="bare SQL floor")
    for q, style in zip(PERCENTILES, ("-", "--", ":"), strict=True):
        ax_lat.plot(rows, [r["floor"][f"p{q}"] for r in results], "k" + style, marker="s", label=f"floor p{q}")
    for ax, title, unit in ((ax_rps, "throughput", "requests/s"), (ax_lat, "latency", "ms")):
        ax.set_xscale("log")
        ax.set_xlabel("total rows")
        ax.set_ylabel(unit)
        ax.set_title(title)
        ax.grid(visible=True, alpha=0.3)
    ax_lat.set_yscale("log")
    ax_rps.legend(fontsize=7)
    ax_lat.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    path = out / "loadtest-vs-rows.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)

    largest = results[-1]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    labels = [f"{lo}-{hi}" for lo, hi in BUCKETS]
    x = np.arange(len(labels))
    for mode in modes:
        search = largest["runs"].get(mode, {}).get("SearchMemories", {}).get("by_scope", {})
        for q, style in zip(PERCENTILES, ("-", "--", ":"), strict=True):
            ax.plot(x, [search.get(b, {}).get(f"p{q}", math.nan) for b in labels], style, marker="o",
                    label=f"SearchMemories p{q} ({mode})")
    for q, style in zip(PERCENTILES, ("-", "--", ":"), strict=True):
        ax.plot(x, [largest["floor"]["by_scope"][b][f"p{q}"] for b in labels], "k" + style, marker="s",
                label=f"floor p{q}")
    ax.set_xticks(x, labels)
    ax.set_xlabel("rows in the searched scope")
    ax.set_ylabel("ms")
    ax.set_yscale("log")
    ax.set_title(f"search latency by scope size at {largest['rows']:,} rows")
    ax.grid(visible=True, alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    path = out / "loadtest-vs-scope.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)
    return written


def _table(results: list[dict[str, Any]]) -> str:
    lines = ["| rows | vectors | RPC | req/s | p50 ms | p95 ms | p99 ms | failures | floor p50/p95/p99 ms "
             "| ratio p50 / p99 | RSS MiB start→max |",
             "|---:|---|---|---:|---:|---:|---:|---:|---|---|---|"]
    for r in results:
        fl = r["floor"]
        for mode, run in r["runs"].items():
            for rpc in ("SearchMemories", "StoreMemories"):
                e = run.get(rpc)
                if not e:
                    continue
                floor_cell = ratio = ""
                if rpc == "SearchMemories":
                    floor_cell = f"{fl['p50']:.1f} / {fl['p95']:.1f} / {fl['p99']:.1f}"
                    ratio = f"{e['p50'] / fl['p50']:.1f}x / {e['p99'] / fl['p99']:.1f}x"
                rss = run["rss_mib"]
                lines.append(
                    f"| {r['rows']:,} | {mode} | {rpc} | {e['rps']:.0f} | {e['p50']:.1f} | {e['p95']:.1f} | "
                    f"{e['p99']:.1f} | {e['failures']} | {floor_cell} | {ratio} | "
                    f"{rss['start']:.0f}→{rss['max']:.0f} |")
        lines.append(f"| {r['rows']:,} | (floor) | bare SQL | {fl['rps']:.0f} | {fl['p50']:.1f} | {fl['p95']:.1f} | "
                     f"{fl['p99']:.1f} | | | | |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:  # noqa: PLR0915  (one straight-line run, easier read top to bottom)
    """Entry point of ``python -m loadtest.bench``."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scales", default="10000,100000", help="total rows per step, ascending (to 1000000)")
    parser.add_argument("--users", type=int, default=32, help="concurrent Locust users (fixed)")
    parser.add_argument("--duration", type=int, default=30, help="seconds of load per run")
    parser.add_argument("--floor-seconds", type=int, default=15, help="seconds of bare SQL per scale")
    parser.add_argument("--floor-concurrency", type=int, default=8, help="connections for the bare SQL")
    parser.add_argument("--vectors", default="caller,server", help="caller and/or server (comma-separated)")
    parser.add_argument("--profiles", default="GameSessionUser", help="Locust user classes, comma-separated")
    parser.add_argument("--processes", type=int, default=1, help="Locust worker processes (--processes)")
    parser.add_argument("--database-url", help="use this PostgreSQL (it must be empty) instead of the embedded one")
    parser.add_argument("--data-dir", type=Path, help="embedded PostgreSQL directory (default: a new /tmp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the embedded data directory")
    parser.add_argument("--serve-arg", action="append", default=[], help="extra `npc-memory serve` argument")
    parser.add_argument("--out", type=Path, default=Path("bench-out"))
    args = parser.parse_args(argv)
    scales = sorted(int(s) for s in args.scales.split(","))
    modes = [m for m in args.vectors.split(",") if m]
    args.out.mkdir(parents=True, exist_ok=True)

    embedded = None
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="npc-memory-bench-", dir="/tmp"))
    url = args.database_url
    if url is None:
        from npc_memory.store.embedded import EmbeddedPostgres

        embedded = EmbeddedPostgres(data_dir)
        url = embedded.url
    pool = load_pool()
    service = Service.start(url, args.out / "serve.log", args.serve_arg)
    print(f"service on port {service.port} (pid {service.proc.pid}); database {url}", file=sys.stderr)
    results: list[dict[str, Any]] = []
    scopes: list[ScopeInfo] = []
    manifest = args.out / "scopes.json"
    try:
        have = 0
        for scale in scales:
            started = time.perf_counter()
            scopes += seed(url, scale - have, prefix=f"b{scale}", pool=pool)
            seeded_s = time.perf_counter() - started
            have = scale
            write_manifest(manifest, scopes)
            entry: dict[str, Any] = {"rows": scale, "scopes": len(scopes), "seed_seconds": seeded_s, "runs": {}}
            for mode in modes:
                prefix = args.out / f"run-{scale}-{mode}"
                for old in args.out.glob(prefix.name + "-samples.*.csv"):
                    old.unlink()
                sampler = service.sample_rss()
                stats = _locust(service.port, manifest, mode, args.users, args.duration, prefix, args.processes,
                                args.profiles.split(","))
                service.stop_sampling()
                sampler.join()
                run = _run_summary(stats, _samples(prefix), args.duration)
                rss = service.rss or [psutil.Process(service.proc.pid).memory_info().rss / 2**20]
                # One sample a second: the per-minute maxima show whether memory stays flat over a long run.
                per_minute = [round(max(rss[i : i + 60]), 1) for i in range(0, len(rss), 60)]
                run["rss_mib"] = {"start": rss[0], "max": max(rss), "end": rss[-1], "per_minute_max": per_minute}
                entry["runs"][mode] = run
                print(f"{scale:>9,} rows {mode:>6}: " + ", ".join(
                    f"{rpc} {e['rps']:.0f}/s p50 {e['p50']:.1f} p99 {e['p99']:.1f} ms fails {e['failures']}"
                    for rpc, e in run.items() if rpc != "rss_mib"), file=sys.stderr)
            floor = asyncio.run(run_floor(url, scopes, pool, args.floor_concurrency, args.floor_seconds))
            entry["floor"] = _floor_summary(floor)
            print(f"{scale:>9,} rows  floor: {floor.rps:.0f}/s p50 {floor.percentile(50):.1f} "
                  f"p99 {floor.percentile(99):.1f} ms", file=sys.stderr)
            results.append(entry)
    finally:
        service.stop()
        if embedded is not None:
            embedded.stop()
            if not args.keep and args.data_dir is None:
                shutil.rmtree(data_dir, ignore_errors=True)

    machine = {"cpus": psutil.cpu_count(), "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
               "platform": platform.platform(), "python": platform.python_version()}
    settings = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    (args.out / "results.json").write_text(
        json.dumps({"machine": machine, "settings": settings, "results": results}, indent=2), encoding="utf-8")
    with (args.out / "results.csv").open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(("rows", "vectors", "rpc", "rps", "p50_ms", "p95_ms", "p99_ms", "failures"))
        for r in results:
            for mode, run in r["runs"].items():
                for rpc, e in run.items():
                    if rpc != "rss_mib":
                        writer.writerow((r["rows"], mode, rpc, round(e["rps"], 1), round(e["p50"], 2),
                                         round(e["p95"], 2), round(e["p99"], 2), e["failures"]))
            fl = r["floor"]
            writer.writerow((r["rows"], "floor", "bare_sql", round(fl["rps"], 1), round(fl["p50"], 2),
                             round(fl["p95"], 2), round(fl["p99"], 2), 0))
    table = _table(results)
    (args.out / "results.md").write_text(table + "\n", encoding="utf-8")
    for path in _plots(results, args.out):
        print(f"wrote {path}", file=sys.stderr)
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
