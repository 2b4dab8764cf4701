"""Prometheus metrics, defined once; the interceptor, engine and pool sampler record into them."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram, start_http_server

RPC_SECONDS = Histogram(
    "npc_memory_rpc_seconds", "gRPC call latency by method and status code", ["method", "code"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
)
EMBED_SECONDS = Histogram("npc_memory_embed_seconds", "time spent in the embedder per call", ["kind"])
SEARCH_CANDIDATES = Histogram(
    "npc_memory_search_results", "results returned per search", buckets=(0, 1, 5, 10, 20, 50, 100),
)
SEARCH_RANKED = Counter(
    "npc_memory_search_ranked_total", "ranked searches by where they were ranked: held scope or statement", ["path"],
)
CONTEXT_PROFILE = Counter(
    "npc_memory_context_profile_total", "context blocks by where their profile rows were read: held scope or statement",
    ["path"],
)
HELD_ROWS = Gauge("npc_memory_scope_cache_rows", "memories this process holds to rank searches in memory")
STORE_OUTCOMES = Counter("npc_memory_store_outcomes_total", "stored facts by outcome", ["outcome"])
POOL_SIZE = Gauge("npc_memory_pool_connections", "open pool connections")
POOL_AVAILABLE = Gauge("npc_memory_pool_available", "idle pool connections")
POOL_WAITING = Gauge("npc_memory_pool_waiting", "requests waiting for a connection")
POOL_WAIT_MS = Gauge("npc_memory_pool_wait_ms_total", "total milliseconds requests waited for a connection")


def serve_metrics(port: int, address: str) -> None:
    """Expose /metrics on ``address`` (the gRPC listener's interface) and the port (0 leaves it off)."""
    if port > 0:
        start_http_server(port, addr=address)
