"""Search speed where players feel it: common words, embedder settings, CPU per request, single stores.

Run by benchmarks.search_speed at its first scale.

Common words: two scopes of exactly 500 and 2,000 memories, where 80% of the memories also say
``COMMON_SUFFIX``, are searched with ``COMMON_QUERY`` (both of its terms occur in most of the scope) and a caller
vector, over gRPC and as the bare statement.

Embedder settings: for each ``embedding.threads`` setting a fresh ``npc-memory serve`` (query cache off, so
every text reaches the model) answers, one at a time, text searches interleaved with the same texts through the
embedder alone at that setting in this process (``LONE_REQUESTS``, each after a pause of ``LONE_GAP_S``);
then ``clients`` threads saturate it with text searches, then with caller-vector searches. The server
process's CPU time (user + system, psutil) over a saturated run divided by the requests it answered is the
service CPU per search (the database's CPU is not in it). Single stores (one new memory per request, the
server embedding it) are interleaved with the embedder alone on the same texts, with the same pauses.
Where a lone text search's time goes is read from the server's own /metrics around the lone searches: the
handler's mean (``npc_memory_rpc_seconds``, SearchMemories) and the model's mean per query
(``npc_memory_embed_seconds``, query), beside the client's mean and the embedder alone in this process, and a
trivial RPC (a health check) after the same pause and again at once: what waking the idle processes (the client,
the server's threads, PostgreSQL) costs a lone request on this machine before any work of the search's own.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import tempfile
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import grpc
import psutil
import psycopg
from grpc_health.v1 import health_pb2, health_pb2_grpc
from npc_memory.embedding.local import LocalE5Embedder
from npc_memory.store.embedded import EmbeddedPostgres
from npc_memory.store.migrate import migrate
from npc_memory.text import Tokenizer
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc
from prometheus_client.parser import text_string_to_metric_families

from benchmarks.search_speed_parts import (
    Ask,
    BareSql,
    first_of_each_scope,
    free_port,
    percentiles,
    served_process,
    timed,
)
from benchmarks.search_speed_targets import PROFILE_SECONDS, profile_load
from loadtest.pool import Pool, load_pool
from loadtest.seed import seed

COMMON_SUFFIX = " 그때 정말 좋아해."
COMMON_QUERY = "그때 좋아해?"
COMMON_SIZES = (500, 2000)
COMMON_PREFIX = "common"
COMMON_DATA_DIR = Path(tempfile.gettempdir()) / "npc-memory-view-cost"
"""Where the bare-SQL benchmarks of the common-word scopes keep their embedded PostgreSQL."""
# 4 in 5 memories of the common scopes get the suffix (a stable choice by id, so a rerun finds the same rows).
MAKE_COMMON = """
UPDATE user_memories SET content = content || %(suffix)s, terms = terms || %(terms)s::text[]
WHERE user_id LIKE %(pattern)s AND abs(hashtext(id::text)) %% 5 <> 0
"""
COMMON_SCOPES = """
SELECT user_id, heroine_id, count(*) FROM user_memories WHERE user_id LIKE %(pattern)s GROUP BY 1, 2 ORDER BY 3
"""
THREAD_SETTINGS = (1, 0)
"""``embedding.threads`` compared: 1 (one core per call, the default before) and 0 (every idle core for a call
alone, one core each when calls overlap)."""


def ensure_common_scopes(url: str, pool: Pool, tok: Tokenizer) -> list[tuple[str, str, int]]:
    """The common-word scopes of this database, seeded (binary COPY) and given the common words on first use."""
    pattern = {"pattern": f"{COMMON_PREFIX}%"}
    with psycopg.connect(url, autocommit=True) as conn:
        found = conn.execute(COMMON_SCOPES, pattern).fetchall()
    if not found:
        for n in COMMON_SIZES:
            seed(url, n, prefix=f"{COMMON_PREFIX}{n}", low=n, high=n, pool=pool, progress=False)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(MAKE_COMMON, {"suffix": COMMON_SUFFIX, "terms": tok.terms(COMMON_SUFFIX), **pattern})
            conn.execute("VACUUM ANALYZE user_memories")
            found = conn.execute(COMMON_SCOPES, pattern).fetchall()
    return [(u, h, int(n)) for u, h, n in found]


@contextmanager
def common_database(data_dir: Path) -> Iterator[tuple[str, list[tuple[str, str, int]], Pool, Tokenizer]]:
    """An embedded PostgreSQL in ``data_dir``, migrated, its common-word scopes seeded on first use; stopped after.

    Yields its URL, the scopes (user, heroine, rows), the vector pool and a tokenizer.
    """
    pool = load_pool()
    tok = Tokenizer()
    pg = EmbeddedPostgres(data_dir)
    try:
        migrate(pg.url)
        yield pg.url, ensure_common_scopes(pg.url, pool, tok), pool, tok
    finally:
        pg.stop()


def search_request(ask: Ask, with_vector: bool) -> svc.SearchMemoriesRequest:
    """A search for the ask's text in its scope, with its query vector if ``with_vector``."""
    req = svc.SearchMemoriesRequest(scope=pb.Scope(user_id=ask.user_id, heroine_id=ask.heroine_id), query=ask.text)
    if with_vector:
        req.query_embedding.extend(ask.vector.tolist())
    return req


def measure_common(stub: svc_grpc.MemoryServiceStub, url: str, scopes: Sequence[tuple[str, str, int]], pool: Pool,
                   tok: Tokenizer, n: int, per_side: int, rng: random.Random, metrics_port: int | None = None,
                   probe: Callable[[], object] | None = None) -> dict[str, Any]:
    """Caller-vector searches for the common query in each common scope: gRPC and the bare statement.

    With ``metrics_port``, the server's own handler mean over the gRPC searches; with ``probe`` (a trivial RPC),
    its round trip at once after them: what of the client's time is the server's work and what the transport.
    """
    out: dict[str, Any] = {}
    bare = BareSql(url, per_side)
    terms = tok.query_terms(COMMON_QUERY)
    try:
        for user_id, heroine_id, rows in scopes:
            asks = [Ask(user_id, heroine_id, COMMON_QUERY, pool.query_vectors[rng.randrange(len(pool.queries))])
                    for _ in range(n)]
            calls = [search_request(a, True) for a in asks]
            sql_requests = [bare.request(a, terms) for a in asks]
            for req, sql_req in zip(calls[:30], sql_requests[:30], strict=True):
                stub.SearchMemories(req)
                bare.run(sql_req)
            grpc_ms: list[float] = []
            sql_ms: list[float] = []
            before = scrape(metrics_port) if metrics_port else {}
            for req, sql_req in zip(calls, sql_requests, strict=True):  # interleaved: both see the same load
                grpc_ms += timed([partial(stub.SearchMemories, req)])
                sql_ms += timed([partial(bare.run, sql_req)])
            found = out[str(rows)] = {"grpc": percentiles(grpc_ms), "sql": percentiles(sql_ms), "terms": terms,
                                      "grpc_over_5ms": sum(ms > 5.0 for ms in grpc_ms), "n": len(grpc_ms)}
            if metrics_port:
                found["server"] = server_means(before, scrape(metrics_port), {"handler": SEARCH_PARTS["handler"]})
            if probe is not None:
                found["probe_at_once"] = percentiles(timed([probe] * RPC_PROBES))
    finally:
        bare.close()
    return out


def saturate(stub: svc_grpc.MemoryServiceStub, make: Callable[[int], svc.SearchMemoriesRequest], pid: int | None,
             clients: int, seconds: float) -> dict[str, Any]:
    """``clients`` threads searching for ``seconds``: requests/s, latency, CPU ms per request of process ``pid``."""
    counter = itertools.count()
    samples: list[float] = []
    lock = threading.Lock()
    server = psutil.Process(pid) if pid is not None else None
    deadline = time.monotonic() + seconds

    def run() -> None:
        mine = []
        while time.monotonic() < deadline:
            request = make(next(counter))
            start = time.perf_counter()
            stub.SearchMemories(request, timeout=60)
            mine.append((time.perf_counter() - start) * 1000)
        with lock:
            samples.extend(mine)

    before = server.cpu_times() if server else None
    started = time.perf_counter()
    threads = [threading.Thread(target=run) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    out: dict[str, Any] = {"rps": len(samples) / elapsed, "latency": percentiles(samples)}
    if server and before:
        after = server.cpu_times()
        cpu_ms = ((after.user - before.user) + (after.system - before.system)) * 1000
        out["cpu_ms_per_request"] = cpu_ms / len(samples)
    return out


LONE_REQUESTS = 100
"""Lone text searches (and as many embedder-alone calls) timed per setting."""
LONE_GAP_S = 0.25
"""Pause before each lone call: a player's requests come seconds apart, and with ``embedding.threads = 0`` the
embedder gives a lone call every core that other processes left idle over the last 0.2 s
(``embedding.cores.OtherLoad``). Back to back, the server's work for the previous search (or this process's
embedding) counted as the other side's load and held both to one core."""


RPC_PROBES = 40
"""Health checks timed after a pause and at once, per setting."""


def wake_cost(channel: grpc.Channel) -> dict[str, dict[str, float]]:
    """A health check's round trip after ``LONE_GAP_S`` of quiet and the same again at once."""
    health = health_pb2_grpc.HealthStub(channel)
    check = partial(health.Check, health_pb2.HealthCheckRequest())
    paused: list[float] = []
    at_once: list[float] = []
    for _ in range(RPC_PROBES):
        time.sleep(LONE_GAP_S)
        paused += timed([check])
        at_once += timed([check])
    return {"after_pause": percentiles(paused), "at_once": percentiles(at_once)}


def store_request(user_id: str, text: str, dated: bool = False) -> svc.StoreMemoriesRequest:
    """One new line of ``user_id`` with the heroine ``store``, as a game stores a player's line.

    ``dated``: the line carries its moment (now), as a game that keeps game time sends it; such a line is read as a
    possible dialogue turn (a read of the scope's latest line before the model).
    """
    request = svc.StoreMemoriesRequest(scope=pb.Scope(user_id=user_id, heroine_id="store"))
    fact = request.memories.add(content=text, importance=5, speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER)
    if dated:
        fact.valid_at.GetCurrentTime()
    return request


def scrape(port: int) -> dict[str, tuple[float, float]]:
    """(sum of seconds, count) per histogram on the server's /metrics.

    Keys: each method's handler (``rpc:SearchMemories``, ...) and each kind of embedding (``embed:query``,
    ``embed:passages``).
    """
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode("utf-8")
    found: dict[str, list[float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name.startswith("npc_memory_rpc_seconds"):
                key = "rpc:" + sample.labels.get("method", "").rsplit("/", 1)[-1]
            elif sample.name.startswith("npc_memory_embed_seconds"):
                key = "embed:" + sample.labels.get("kind", "")
            else:
                continue
            if sample.name.endswith(("_sum", "_count")):
                found.setdefault(key, [0.0, 0.0])[sample.name.endswith("_count")] += sample.value
    return {k: (v[0], v[1]) for k, v in found.items()}


SEARCH_PARTS = {"handler": "rpc:SearchMemories", "model": "embed:query"}
STORE_PARTS = {"handler": "rpc:StoreMemories", "model": "embed:passages"}


def server_means(before: dict[str, tuple[float, float]], after: dict[str, tuple[float, float]],
                 parts: dict[str, str]) -> dict[str, float]:
    """Mean milliseconds per call of each of ``parts`` (name: histogram key) between two scrapes."""
    def mean(key: str) -> float:
        s0, n0 = before.get(key, (0.0, 0.0))
        s1, n1 = after.get(key, (0.0, 0.0))
        return 1000 * (s1 - s0) / max(1.0, n1 - n0)
    return {f"{name}_ms": mean(key) for name, key in parts.items()}


def per_setting(url: str, folder: Path, threads: int, texts: Sequence[str], asks: Sequence[Ask],
                passages: Sequence[str], clients: int, seconds: float, profile: bool = True) -> dict[str, Any]:
    """Lone and saturated searches and single stores against a server with ``embedding.threads = threads``.

    With ``profile``, the default setting (0) is also saturated with caller-vector searches once more under py-spy
    (after the measured run, so the sampling does not load it): where its CPU goes.
    """
    out: dict[str, Any] = {"threads": threads}
    metrics_port = free_port()
    env = {"NPC_MEMORY_EMBEDDING_THREADS": str(threads), "NPC_MEMORY_QUERY_CACHE_SIZE": "0",
           "NPC_MEMORY_METRICS_PORT": str(metrics_port)}
    embedder = LocalE5Embedder(threads)
    loop = asyncio.new_event_loop()
    text_asks = [Ask(a.user_id, a.heroine_id, t, a.vector) for a, t in zip(itertools.cycle(asks), texts)]
    try:
        with served_process(url, folder / f"server-threads-{threads}.log", env=env) as (channel, pid):
            stub = svc_grpc.MemoryServiceStub(channel)
            # Warm-up: model pages, connections, statements, and every scope searched once (the first search of a
            # scope reads it to hold in the background, beside whatever runs then).
            for i, a in enumerate(first_of_each_scope(text_asks) + text_asks[:5]):
                stub.SearchMemories(search_request(replace(a, text=f"{a.text} ({i})"), False))
                loop.run_until_complete(embedder.embed_queries([a.text]))
            time.sleep(1.0)  # the background reads finish
            out["lone_rpc"] = wake_cost(channel)
            search_ms: list[float] = []
            alone_ms: list[float] = []
            before = scrape(metrics_port)
            for a in text_asks[:LONE_REQUESTS]:  # the same text both ways (the server caches no vector)
                time.sleep(LONE_GAP_S)
                alone_ms += timed([partial(loop.run_until_complete, embedder.embed_queries([a.text]))])
                time.sleep(LONE_GAP_S)
                search_ms += timed([partial(stub.SearchMemories, search_request(a, False))])
            out["lone_search"], out["lone_embedder"] = percentiles(search_ms), percentiles(alone_ms)
            out["lone_server"] = server_means(before, scrape(metrics_port), SEARCH_PARTS)
            out["saturated_text"] = saturate(
                stub, lambda i: search_request(text_asks[i % len(text_asks)], False), pid, clients, seconds)
            out["saturated_vector"] = saturate(
                stub, lambda i: search_request(asks[i % len(asks)], True), pid, clients, seconds)
            if profile and threads == 0:
                spell = min(seconds, PROFILE_SECONDS)
                out["vector_profile"] = profile_load(pid, folder / "profile-vector.txt", spell, lambda: saturate(
                    stub, lambda i: search_request(asks[i % len(asks)], True), pid, clients, spell))
            user_id = f"store-{threads}-{uuid.uuid4().hex[:8]}"
            before = scrape(metrics_port)
            store_ms: list[float] = []
            passage_ms: list[float] = []
            for i, text in enumerate(passages):
                fresh = f"{text} ({threads}-{i})"
                time.sleep(LONE_GAP_S)
                passage_ms += timed([partial(loop.run_until_complete, embedder.embed_passages([fresh]))])
                time.sleep(LONE_GAP_S)
                store_ms += timed([partial(stub.StoreMemories, store_request(user_id, fresh), timeout=60)])
            out["store"], out["store_embedder"] = percentiles(store_ms[5:]), percentiles(passage_ms[5:])
            out["store_server"] = server_means(before, scrape(metrics_port), STORE_PARTS)
    except grpc.RpcError as exc:
        raise RuntimeError(f"a request failed: {exc}") from exc
    finally:
        loop.run_until_complete(embedder.aclose())
        loop.close()
    return out


def report_load(result: dict[str, Any]) -> str:
    """Markdown tables of the common-word, per-setting and CPU measurements."""
    def f(p: dict[str, float], cols: tuple[str, ...] = ("p50", "p95", "p99")) -> str:
        return " / ".join(f"{p[c]:.2f}" for c in cols)
    lines = ["", f"Common words: caller vector + query {COMMON_QUERY!r} (terms in ~80% of the scope)", "",
             "| scope rows | gRPC p50/p95/p99 | bare SQL p50/p95/p99 | gRPC p99 target 5 ms |", "|---:|---|---|---|"]
    for rows, r in result["common"].items():
        lines.append(f"| {int(rows):,} | {f(r['grpc'])} | {f(r['sql'])} | "
                     f"{'met' if r['grpc']['p99'] <= 5.0 else 'missed'} |")
    settings = result["settings"]
    fastest = min(s["lone_embedder"]["p50"] for s in settings)
    lines += ["", "Embedder settings (embedding.threads; query cache off):", "",
              "| threads | lone text search p50/p95 | embedder alone p50/p95 | search p50 - fastest embedder p50 | "
              "saturated text search req/s (p50) | CPU ms/text search | saturated caller-vector req/s | "
              "CPU ms/vector search | single store p50 | store p50 - embedder p50 |",
              "|---:|---|---|---:|---|---:|---:|---:|---:|---:|"]
    for s in settings:
        st, sv = s["saturated_text"], s["saturated_vector"]
        lines.append(
            f"| {s['threads']} | {f(s['lone_search'], ('p50', 'p95'))} | {f(s['lone_embedder'], ('p50', 'p95'))} | "
            f"{s['lone_search']['p50'] - fastest:+.2f} | {st['rps']:.1f} ({st['latency']['p50']:.1f} ms) | "
            f"{st['cpu_ms_per_request']:.2f} | {sv['rps']:.1f} | {sv['cpu_ms_per_request']:.2f} | "
            f"{s['store']['p50']:.2f} | {s['store']['p50'] - s['store_embedder']['p50']:+.2f} |")
    lines += ["", "Where a lone text search goes (means, ms; the server's own /metrics):", "",
              "| threads | client sees | server handler | of it the model | handler less model | transport and client "
              "| embedder alone here | health check p50 after the pause / at once |",
              "|---:|---:|---:|---:|---:|---:|---:|---|"]
    for s in settings:
        client, server = s["lone_search"]["mean"], s["lone_server"]
        lines.append(f"| {s['threads']} | {client:.2f} | {server['handler_ms']:.2f} | {server['model_ms']:.2f} | "
                     f"{server['handler_ms'] - server['model_ms']:.2f} | {client - server['handler_ms']:.2f} | "
                     f"{s['lone_embedder']['mean']:.2f} | {s['lone_rpc']['after_pause']['p50']:.2f} / "
                     f"{s['lone_rpc']['at_once']['p50']:.2f} |")
    return "\n".join(lines)
