"""The speed targets of benchmarks.search_speed, each met or missed, and where the time went in the same run.

A target's "why" is read off this run's own figures: the server's /metrics (its handler and its model, means),
a trivial RPC (a health check) after the same pause and at once, the embedder alone in the client's process, and
py-spy's samples of the saturated server (benchmarks/sampling.py) for the CPU per search.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

from benchmarks.sampling import LOOP_THREAD, grouped, sampled

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
