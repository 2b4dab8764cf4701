"""A lone player's text search (or store) over gRPC, two servers side by side in one run, beside the embedder alone.

    python -m benchmarks.lone_grpc [--rows 10000] [--queries 150] [--call search|vector-search|store|dated-store]
                                   [--before-src DIR]
                                   [--before-env KEY=VALUE ...] [--after-env KEY=VALUE ...] [--json out.json]

Uses (and seeds on first use) the database of ``benchmarks.search_speed`` at that scale. Two ``npc-memory serve``
processes run at once on it, both with ``embedding.threads`` 0 and the query cache off: this code twice, or, with
``--before-src DIR`` (a ``git archive COMMIT | tar -x -C DIR`` tree), that code's server and this one;
``--before-env`` and ``--after-env`` add environment variables to one server only (one setting against another on
the same code). For each question, after a player's pause (0.25 s) each time, in turn: a text search to the one
server, to the other, and the bundled model alone in this process on the same text (its fastest setting: every idle
core for a lone call), the order rotating by question, after every scope was searched once. No vector is cached
anywhere: each of the three spells the question its own way. Printed: p50 / p95 / mean of each, and each server's
p50 less the embedder's (the issue's target: within 3 ms), with a health check's round trip after the same pause
(what gRPC and this machine cost a lone call), and each server's own /metrics over the measured calls: its handler's
mean, the model's within it, and what the client saw beyond the handler. ``--call store``: single stores instead
(one new line each, every server its own player, as ``benchmarks.search_speed`` stores), beside the model embedding
the same text as a passage (the issue's target: within 2 ms). ``--call dated-store``: the same lines, each with its
moment (now), as a game keeping game time sends them: such a line is read as a possible dialogue turn, a read of the
scope's latest line before the model (and, when it continues one, embedded over the line before it, so its model call
takes a longer text than the embedder alone's). ``--call vector-search``: the text searches with the question's vector
given (a game that embeds on its side); each text is new to the server, so its keyword terms are too, and the embedder
alone's line is only the rhythm of the other modes (no model runs in the servers).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import tempfile
import time
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from grpc_health.v1 import health_pb2, health_pb2_grpc
from npc_memory.embedding.local import LocalE5Embedder
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc

from benchmarks.search_speed import ensure_seeded, plan
from benchmarks.search_speed_load import (
    SEARCH_PARTS,
    STORE_PARTS,
    scrape,
    search_request,
    server_means,
    store_request,
)
from benchmarks.search_speed_parts import (
    Ask,
    before_pythonpath,
    distinct_questions,
    first_of_each_scope,
    free_port,
    percentiles,
    served_process,
)
from loadtest.pool import load_pool

PAUSE_S = 0.25
"""A player's requests come seconds apart; back to back, one call's leftover work lands on the next."""


def env_pairs(pairs: list[str]) -> dict[str, str]:
    """``KEY=VALUE`` options as a mapping."""
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"expected KEY=VALUE, got {pair!r}")
        out[key] = value
    return out


def servers(before_src: Path | None, before_env: dict[str, str],
            after_env: dict[str, str]) -> dict[str, dict[str, str]]:
    """The two servers' environments: ``before`` (the earlier code, or this one) and ``after`` (this code)."""
    common = {"NPC_MEMORY_EMBEDDING_THREADS": "0", "NPC_MEMORY_QUERY_CACHE_SIZE": "0"}
    before = common | {"NPC_MEMORY_METRICS_PORT": str(free_port())} | before_env
    if before_src is not None:
        before["PYTHONPATH"] = before_pythonpath(before_src)
    return {"before": before, "after": common | {"NPC_MEMORY_METRICS_PORT": str(free_port())} | after_env}


Stubs = dict[str, tuple[svc_grpc.MemoryServiceStub, health_pb2_grpc.HealthStub]]


def _calls(call: str, i: int, a: Ask, stubs: Stubs, players: dict[str, str], lines: list[str], texts: list[str],
           embedder: LocalE5Embedder, loop: asyncio.AbstractEventLoop) -> list[tuple[str, Callable[[], Any]]]:
    """The ``i``-th round's calls: each server's, then the embedder alone's on the same text."""
    if call in ("store", "dated-store"):
        line = lines[i % len(lines)]
        dated = call == "dated-store"
        calls: list[tuple[str, Callable[[], Any]]] = [
            (name, partial(stub.StoreMemories, store_request(players[name], f"{line} ({name} {i})", dated)))
            for name, (stub, _h) in stubs.items()]
        calls.append(("embedder alone", partial(
            loop.run_until_complete, embedder.embed_passages([f"{line} (alone {i})"]))))
        return calls
    text = texts[(i + 10) % len(texts)]
    with_vector = call == "vector-search"
    calls = [(name, partial(stub.SearchMemories, search_request(replace(a, text=f"{text} ({name} {i})"), with_vector)))
             for name, (stub, _h) in stubs.items()]
    calls.append(("embedder alone", partial(loop.run_until_complete, embedder.embed_queries([f"{text} (alone)"]))))
    return calls


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Both servers up; every question asked of each and of the embedder alone, each after a pause."""
    folder = args.data_dir / str(args.rows)
    pool = load_pool()
    pg, scopes = ensure_seeded(folder, args.rows, pool)
    asks = plan(random.Random(11), scopes, pool, args.queries)
    texts = distinct_questions(pool.queries)
    random.Random(12).shuffle(texts)
    embedder = LocalE5Embedder(0)
    loop = asyncio.new_event_loop()
    samples: dict[str, list[float]] = {"before": [], "after": [], "embedder alone": [], "health check": []}
    try:
        with ExitStack() as stack:
            stubs: Stubs = {}
            metrics = {}
            for name, env in servers(args.before_src, env_pairs(args.before_env), env_pairs(args.after_env)).items():
                metrics[name] = int(env["NPC_MEMORY_METRICS_PORT"])
                channel, _pid = stack.enter_context(served_process(pg.url, folder / f"lone-grpc-{name}.log", env=env))
                stubs[name] = (svc_grpc.MemoryServiceStub(channel), health_pb2_grpc.HealthStub(channel))
            # Warm-up: every scope searched once (the first search of a scope reads it to hold in the background),
            # pool connections, prepared statements, the model's pages.
            for i, (a, text) in enumerate(zip(first_of_each_scope(asks) + asks[:5], texts, strict=False)):
                for stub, _health in stubs.values():
                    stub.SearchMemories(search_request(replace(a, text=f"{text} {i}"), False))
                loop.run_until_complete(embedder.embed_queries([text]))
            players = {name: f"lone-store-{name}-{uuid.uuid4().hex[:8]}" for name in stubs}
            questions = set(pool.queries)
            lines = [p for p in pool.passages if p not in questions]
            if args.call.endswith("store"):  # each player's scope made, the write statements prepared
                for i in range(5):
                    for name, (stub, _health) in stubs.items():
                        stub.StoreMemories(store_request(players[name], f"{lines[-1 - i]} (warm-up)",
                                                         args.call == "dated-store"))
            time.sleep(1.0)  # the background reads finish
            scraped = {name: scrape(port) for name, port in metrics.items()}
            for i, a in enumerate(asks):
                calls = _calls(args.call, i, a, stubs, players, lines, texts, embedder, loop)
                calls.append(("health check", partial(stubs["after"][1].Check, health_pb2.HealthCheckRequest())))
                turn = i % len(calls)
                for name, call in calls[turn:] + calls[:turn]:
                    time.sleep(PAUSE_S)
                    started = time.perf_counter()
                    call()
                    samples[name].append((time.perf_counter() - started) * 1000)
            parts = STORE_PARTS if args.call.endswith("store") else SEARCH_PARTS
            servers_seen = {name: server_means(scraped[name], scrape(port), parts) for name, port in metrics.items()}
    finally:
        loop.run_until_complete(embedder.aclose())
        loop.close()
        pg.stop()
    out: dict[str, Any] = {name: percentiles(ms) for name, ms in samples.items()}
    out["server"] = servers_seen
    out["rows"], out["queries"], out["before_src"] = args.rows, len(asks), str(args.before_src or "")
    out["call"] = args.call
    out["before_env"], out["after_env"] = args.before_env, args.after_env
    return out


def show(result: dict[str, Any]) -> None:
    """Print the table and each server's distance from the embedder alone."""
    before = "before (" + " ".join([result["before_src"] or "this code", *result.get("before_env", [])]) + ")"
    after = "after (" + " ".join(["this code", *result.get("after_env", [])]) + ")"
    what = {"store": "single stores", "dated-store": "single dated stores",
            "vector-search": "caller-vector searches (each text new)"}.get(result.get("call", ""), "text searches")
    print(f"lone {what} over gRPC, {result['rows']:,} rows, {result['queries']} requests, {PAUSE_S} s apart\n")
    print("| call | p50 ms | p95 ms | mean ms | p50 - embedder alone p50 |")
    print("|---|---:|---:|---:|---:|")
    alone = result["embedder alone"]["p50"]
    for name, label in (("before", before), ("after", after), ("embedder alone", "embedder alone"),
                        ("health check", "health check")):
        p = result[name]
        print(f"| {label} | {p['p50']:.2f} | {p['p95']:.2f} | {p['mean']:.2f} | {p['p50'] - alone:+.2f} |")
    if "server" in result:
        print("\nEach server's own /metrics over the measured calls (means, ms):\n")
        print("| server | handler | of it the model | handler less the model | client's mean less the handler |")
        print("|---|---:|---:|---:|---:|")
        for name, label in (("before", before), ("after", after)):
            m = result["server"][name]
            print(f"| {label} | {m['handler_ms']:.2f} | {m['model_ms']:.2f} | {m['handler_ms'] - m['model_ms']:.2f} | "
                  f"{result[name]['mean'] - m['handler_ms']:.2f} |")


def main() -> None:
    """Parse options, measure, print, optionally write JSON."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=150, help="requests to each server")
    parser.add_argument("--call", choices=("search", "vector-search", "store", "dated-store"), default="search",
                        help="what a lone player sends: a text search, one with its vector (the caller's), a single "
                             "store of a new line, or one that carries its moment (read as a possible dialogue turn "
                             "before the model)")
    parser.add_argument("--data-dir", type=Path, default=Path(tempfile.gettempdir()) / "npc-memory-speed")
    parser.add_argument("--before-src", dest="before_src", type=Path, help="an earlier tree's server as 'before'")
    parser.add_argument("--before-env", dest="before_env", action="append", default=[], metavar="KEY=VALUE",
                        help="an environment variable for the 'before' server only (repeatable)")
    parser.add_argument("--after-env", dest="after_env", action="append", default=[], metavar="KEY=VALUE",
                        help="an environment variable for the 'after' server only (repeatable)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    result = measure(args)
    show(result)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
