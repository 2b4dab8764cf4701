"""The speed targets of benchmarks.search_speed, each met or missed, and where the time went in the same run.

A target's "why" is read off this run's own figures: the server's /metrics (its handler and its model, means),
a trivial RPC (a health check) after the same pause and at once, the embedder alone in the client's process, and
py-spy's samples of the saturated server (grouped by the part of the request path each stack is in) for the CPU
per search.
"""

from __future__ import annotations

import collections
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import psutil

T = TypeVar("T")
Groups = tuple[tuple[str, tuple[str, ...]], ...]

# The first group any frame of a stack (innermost first) belongs to; the last takes what is left.
GROUPS: Groups = (
    ("psycopg: statement placeholders parsed", ("_query2pg", "_split_query", "PostgresQuery.convert", "as_bytes")),
    ("psycopg: send, wait, fetch, row making", ("psycopg/", "psycopg_pool/")),
    ("model (embedding)", ("embedding/",)),
    ("tokenising the query", ("text/", "kiwipiepy")),
    ("response building (api/convert.py)", ("api/convert.py",)),
    ("request parsing and validation", ("api/requests.py", "api/validation.py")),
    ("rows to domain values", ("store/search.py", "memory_from_row")),
    # Not "ops/": the event loop's own frame is ops/loop.py, under every sample of the loop's thread.
    ("interceptor: decode, auth, metrics, logs",
     ("interceptor.py", "deserialize.py", "ops/metrics.py", "ops/logs.py", "ops/keys.py")),
    ("held scopes and the scoring function",
     ("domain/scoring.py", "npc_memory/search/")),
    ("engine and statement choice", ("engine/memory.py", "search_sql.py", "store/search.py")),
    ("event loop's own work (uvloop's C code, gRPC's callbacks on the loop)", ("ops/loop.py",)),
)
REST = "other threads (gRPC's poller thread, executors)"
LOOP_THREAD = "ops/loop.py"
"""A frame under every sample of the server's event-loop thread (``npc-memory serve`` runs its loop there)."""


def grouped(raw: Path, groups: Groups = GROUPS, rest: str = REST, within: str | None = None,
            ) -> tuple[int, dict[str, int]]:
    """Samples in all, and per group, of a py-spy ``--format raw`` file (only stacks holding ``within``, if given)."""
    counts: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if within is not None and within not in stack:
            continue
        total += int(n)
        name = rest
        for frame in reversed(stack.split(";")):
            found = next((g for g, keys in groups if any(k in frame for k in keys)), None)
            if found:
                name = found
                break
        counts[name] += int(n)
    return total, dict(counts)


def share_table(path: str, total: int, counts: dict[str, int], groups: Groups = GROUPS, rest: str = REST) -> str:
    """The Markdown table of each group's share of the samples."""
    names = [g for g, _ in groups] + [rest]
    rows = [f"| {name} | {100 * counts.get(name, 0) / max(total, 1):.1f}% |" for name in names]
    return "\n".join([f"| part of the {path} | share of samples |", "|---|---:|", *rows])


def py_spy() -> str:
    """The py-spy program: on the PATH, or beside this Python (a virtualenv's, run without activating it)."""
    found = shutil.which("py-spy") or shutil.which("py-spy", path=str(Path(sys.executable).parent))
    if found is None:
        raise FileNotFoundError("py-spy is not installed (scripts/setup --dev installs it)")
    return found


def sampled(pid: int, seconds: float, raw: Path, run: Callable[[], T]) -> T:
    """``run()``'s answer, while py-spy samples process ``pid`` for ``seconds`` into ``raw`` (its raw format)."""
    spy = subprocess.Popen([py_spy(), "record", "--pid", str(pid), "--duration", str(max(1, int(seconds))),
                            "--rate", "200", "--format", "raw", "--output", str(raw), "--nonblocking"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1)  # py-spy attaches
    try:
        return run()
    finally:
        if spy.wait() != 0:
            raise RuntimeError(f"py-spy exited with {spy.returncode} (it needs ptrace rights over pid {pid})")


PROFILE_SECONDS = 6.0
"""Length of the extra saturated caller-vector run that py-spy samples (after the measured one)."""
LONE_TEXT_TARGET_MS = 3.0
COMMON_P99_TARGET_MS = 5.0
CPU_TARGET_MS = 1.5
STORE_TARGET_MS = 2.0


def profile_load(pid: int, raw: Path, seconds: float, run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``run`` (a saturated load on process ``pid``) under py-spy: where the event loop's thread spends its CPU.

    The CPU is each thread's own (psutil), per request answered: py-spy counts a thread blocked in C code (gRPC's
    poller in epoll) as busy, so its samples are shared out only over the loop thread's CPU. Without py-spy (or
    ptrace rights over ``pid``) the load is not run, and the reason is kept instead.
    """
    server = psutil.Process(pid)

    def cpu() -> dict[int, float]:
        return {t.id: t.user_time + t.system_time for t in server.threads()}

    before = cpu()
    try:
        load = sampled(pid, seconds, raw, run)
    except (FileNotFoundError, RuntimeError) as exc:
        return {"skipped": str(exc)}
    after = cpu()
    n = max(1.0, load["latency"]["n"])
    spent = {t: (s - before.get(t, 0.0)) * 1000 / n for t, s in after.items()}
    total, counts = grouped(raw, within=LOOP_THREAD)
    return {"load": load, "loop_samples": total, "loop_cpu_ms": spent.get(pid, 0.0),
            "other_threads_cpu_ms": sum(v for t, v in spent.items() if t != pid),
            "loop_shares": {k: v / max(total, 1) for k, v in counts.items()}}


def _verdict(met: bool) -> str:
    return "met" if met else "missed"


def _split(threads: int, client_mean: float, server: dict[str, float], alone_mean: float) -> str:
    """A lone call's mean split: transport and client, the handler less the model, the model against it alone."""
    return (f"threads {threads}, means: transport and client {client_mean - server['handler_ms']:.2f}; the handler "
            f"less the model {server['handler_ms'] - server['model_ms']:.2f}; the model in the server "
            f"{server['model_ms']:.2f} against {alone_mean:.2f} alone")


def _lone_text(settings: list[dict[str, Any]]) -> str:
    fastest = min(s["lone_embedder"]["p50"] for s in settings)
    s = min(settings, key=lambda s: s["lone_search"]["p50"])
    gap = s["lone_search"]["p50"] - fastest
    why = (_split(s["threads"], s["lone_search"]["mean"], s["lone_server"], s["lone_embedder"]["mean"])
           + f" (a health check after the same pause {s['lone_rpc']['after_pause']['p50']:.2f} p50)")
    return (f"| lone text search p50 - fastest embedder p50 ≤ +{LONE_TEXT_TARGET_MS:g} ms | {gap:+.2f} | "
            f"{_verdict(gap <= LONE_TEXT_TARGET_MS)} | {why} |")


def _common(common: dict[str, Any]) -> str:
    c = common.get("2000")
    if c is None:
        return "| common words at 2,000 rows | not run | — | — |"
    p99 = c["grpc"]["p99"]
    parts = [f"p50 {c['grpc']['p50']:.2f}, {c['grpc_over_5ms']} of {c['n']} requests over 5 ms"]
    if "server" in c:
        parts.append(f"the server's handler {c['server']['handler_ms']:.2f} (mean), the rest transport and client")
    if "probe_at_once" in c:
        parts.append(f"a health check at once {c['probe_at_once']['p50']:.2f} p50")
    return (f"| caller-vector p99 ≤ {COMMON_P99_TARGET_MS:g} ms at 2,000 rows, common words | {p99:.2f} | "
            f"{_verdict(p99 <= COMMON_P99_TARGET_MS)} | {'; '.join(parts)} |")


def _cpu(settings: list[dict[str, Any]]) -> str:
    s = next((s for s in settings if "vector_profile" in s), settings[-1])
    cpu = s["saturated_vector"]["cpu_ms_per_request"]
    profile = s.get("vector_profile", {"skipped": "not taken"})
    if "loop_shares" in profile:
        loop = profile["loop_cpu_ms"]
        top = sorted(profile["loop_shares"].items(), key=lambda kv: -kv[1])[:5]
        why = (f"a profiled run: the event loop's thread {loop:.2f} ms a search, the other threads "
               f"{profile['other_threads_cpu_ms']:.2f}; of the loop's (py-spy, {profile['loop_samples']} samples): "
               + "; ".join(f"{name} {share * loop:.2f}" for name, share in top))
    else:
        why = f"no profile: {profile['skipped']}"
    return (f"| service CPU per caller-vector search ≤ {CPU_TARGET_MS:g} ms (threads {s['threads']}) | {cpu:.2f} | "
            f"{_verdict(cpu <= CPU_TARGET_MS)} | {why} |")


def _store(settings: list[dict[str, Any]]) -> str:
    s = min(settings, key=lambda s: s["store"]["p50"] - s["store_embedder"]["p50"])
    gap = s["store"]["p50"] - s["store_embedder"]["p50"]
    server = s.get("store_server")
    why = ("no /metrics read" if server is None
           else _split(s["threads"], s["store"]["mean"], server, s["store_embedder"]["mean"]))
    return (f"| single store p50 - embedder p50 ≤ +{STORE_TARGET_MS:g} ms | {gap:+.2f} | "
            f"{_verdict(gap <= STORE_TARGET_MS)} | {why} |")


def report_targets(result: dict[str, Any]) -> str:
    """The Markdown table of the issue's speed targets in this run, each with where its time went (ms)."""
    lines = ["", "Targets, this run (ms):", "", "| target | measured | result | where the time went |",
             "|---|---:|---|---|"]
    settings = result.get("settings")
    if settings:
        lines += [_lone_text(settings), _common(result.get("common", {})), _cpu(settings), _store(settings)]
    recall = result["recall_at_10"]
    lines.append(f"| the exact top 10 returned (recall@10) | {recall:.1%} | "
                 f"{'kept' if recall >= 0.999 else 'lost'} | relevance-only searches against a plain scan |")
    return "\n".join(lines)
