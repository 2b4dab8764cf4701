"""OpenTelemetry traces, sent over OTLP/HTTP to a real receiver in the test: the span tree of a store and a search."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import pytest_asyncio
from grpc_health.v1 import health_pb2, health_pb2_grpc
from npc_memory.engine import MemoryEngine
from npc_memory.ops import tracing
from npc_memory.server import create_server
from npc_memory_client.v1 import extraction_pb2 as ex
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc
from opentelemetry.proto.trace.v1 import trace_pb2
from otlp_collector import Collector, serve_collector
from own_database import separate_database

STORED = "레티아는 비밀 정원에서 은방울꽃을 키운다"
QUERY = "레티아가 키우는 꽃이 뭐였지"
STORE = "/npc_memory.v1.MemoryService/StoreMemories"
SEARCH = "/npc_memory.v1.MemoryService/SearchMemories"
DIALOGUE = "/npc_memory.v1.MemoryService/StoreDialogue"
SAID = "정원에 가면 종소리가 들려"


@pytest.fixture(scope="module")
def collector() -> Iterator[Collector]:
    """The OTLP/HTTP receiver for this module."""
    yield from serve_collector()


@pytest_asyncio.fixture(scope="module")
async def traced(engine: MemoryEngine, collector: Collector) -> AsyncIterator[tuple[svc_grpc.MemoryServiceAsyncStub,
                                                                                   Any]]:
    """A live server with tracing on, its exporter pointed at the receiver by the standard OTEL_* variables."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url)
        env.setenv("OTEL_SERVICE_NAME", "npc-memory-test")
        traces = tracing.provider()
    async with tracing.tracing(traces):
        server, port, _ = await create_server(engine, "127.0.0.1:0", traces=traces)
        await server.start()
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                yield svc_grpc.MemoryServiceStub(channel), traces
        finally:
            await server.stop(0)


def _children(spans: list[trace_pb2.Span], parent: trace_pb2.Span) -> list[trace_pb2.Span]:
    return [s for s in spans if s.parent_span_id == parent.span_id and s.trace_id == parent.trace_id]


def _texts(span: trace_pb2.Span) -> list[str]:
    """Every string a span carries: its name, attributes, events, links' attributes and status message."""
    out = [span.name, span.status.message]
    for attributes in [span.attributes, *(e.attributes for e in span.events), *(k.attributes for k in span.links)]:
        out += [f"{a.key}={a.value}" for a in attributes]
    out += [e.name for e in span.events]
    return out


async def _received(collector: Collector, traces: Any) -> list[trace_pb2.Span]:
    """What the receiver holds once the exporter has sent every ended span (force_flush waits for the POST)."""
    assert await asyncio.to_thread(traces.force_flush, 10_000)
    return collector.received()


async def test_a_store_and_a_search_make_the_expected_span_trees(
    traced: tuple[svc_grpc.MemoryServiceAsyncStub, Any], collector: Collector,
) -> None:
    """Each call is a SERVER span over its model call and database work; no span carries the text or the query."""
    stub, traces = traced
    scope = pb.Scope(user_id=f"player-{uuid.uuid4().hex[:10]}", heroine_id="letia")
    await stub.StoreMemories(svc.StoreMemoriesRequest(scope=scope, memories=[pb.MemoryInput(
        speaker=pb.SPEAKER_HEROINE, subject=pb.SUBJECT_HEROINE, subject_id="letia", content=STORED, importance=7)]))
    await stub.StoreDialogue(svc.StoreDialogueRequest(scope=scope, dialogue=ex.Dialogue(dialogue_id="d-1", turns=[
        ex.DialogueTurn(speaker=pb.SPEAKER_USER, text=SAID)])))
    found = await stub.SearchMemories(svc.SearchMemoriesRequest(scope=scope, query=QUERY))
    assert STORED in [r.memory.content for r in found.results]
    spans = await _received(collector, traces)

    (store,) = [s for s in spans if s.name == STORE]
    assert store.kind == trace_pb2.Span.SPAN_KIND_SERVER
    assert not store.parent_span_id
    under_store = {s.name: s for s in _children(spans, store)}
    assert {"embed", "db.write"} <= set(under_store)
    assert {a.key: a.value.int_value for a in under_store["db.write"].attributes} == {"facts": 1}
    assert "db.statement" in {s.name for s in _children(spans, under_store["db.write"])}

    (dialogue,) = [s for s in spans if s.name == DIALOGUE]
    assert {"embed", "db.write"} <= {s.name for s in _children(spans, dialogue)}

    (search,) = [s for s in spans if s.name == SEARCH]
    under_search = [s.name for s in _children(spans, search)]
    assert "embed" in under_search
    assert "db.statement" in under_search
    assert {s.trace_id for s in spans if s.name == "embed"} >= {store.trace_id, search.trace_id}

    carried = [t for s in spans for t in _texts(s)]
    for secret in (STORED, QUERY, SAID, *STORED.split(), *QUERY.split(), *SAID.split()):
        assert not any(secret in t for t in carried), secret
    assert {attrs.get("service.name") for attrs, _ in collector.spans} == {"npc-memory-test"}


async def test_the_health_watcher_and_work_outside_calls_make_no_spans(
    traced: tuple[svc_grpc.MemoryServiceAsyncStub, Any], collector: Collector, engine: MemoryEngine,
) -> None:
    """Database work outside a call (a ping, the worker) is not traced: only calls start traces."""
    _stub, traces = traced
    before = len(collector.received())
    await engine.db.ping()
    await asyncio.to_thread(traces.force_flush)
    assert len(collector.received()) == before



def _serve_traced(url: str, env: dict[str, str], log: Path) -> None:
    """Run ``serve --tracing`` on ``url``, make a health check and one call, then stop it with SIGTERM."""
    with log.open("w") as err:
        proc = subprocess.Popen([str(Path(sys.executable).parent / "npc-memory"), "serve", "--tracing", "--port", "0",
                                 "--host", "127.0.0.1", "--database-url", url],
                                stdout=subprocess.PIPE, stderr=err, text=True, env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("npc-memory serving on port "), log.read_text()[-2000:]
        port = int(line.rsplit(" ", 1)[1])
        player = f"player-{uuid.uuid4().hex[:10]}"
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=10)
            svc_grpc.MemoryServiceStub(channel).ListMemories(svc.ListMemoriesRequest(
                scope=pb.Scope(user_id=player, heroine_id="letia")), timeout=10)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        if proc.stdout is not None:
            proc.stdout.close()
    assert proc.returncode == 0, log.read_text()[-2000:]


def test_serve_with_the_tracing_flag_sends_each_call_and_no_health_check(
    collector: Collector, database_url: str, tmp_path: Path,
) -> None:
    """``serve --tracing`` exports by the OTEL_* variables; a call is traced, a health check is not; SIGTERM flushes."""
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url, "OTEL_SERVICE_NAME": "npc-memory-serve"}
    log = tmp_path / "serve.log"
    # A database of its own: what other tests record in the shared one (a model's name) must not stop this start.
    with separate_database(database_url, "npc_traced") as url:
        _serve_traced(url, env, log)
    spans = [s for attrs, s in collector.spans if attrs.get("service.name") == "npc-memory-serve"]
    (listed,) = [s for s in spans if s.name == "/npc_memory.v1.MemoryService/ListMemories"]
    assert "db.statement" in [s.name for s in _children(spans, listed)]
    assert not [s for s in spans if "Health" in s.name]
