"""An OpenAI-compatible endpoint's refusals: ConfigError only at start, then the text's fault or the endpoint's.

During a request a refused text is INVALID_ARGUMENT naming it; any other failure is UNAVAILABLE. A remote
embedding API cannot run here, so the endpoint is a real HTTP server in this test that answers each call from
a script the test sets (a status and body, or a delay); unscripted calls get unit vectors.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING

import grpc
import pytest
import pytest_asyncio
from google.protobuf import field_mask_pb2
from google.rpc import error_details_pb2
from grpc_status import rpc_status
from npc_memory.domain.model import Scope
from npc_memory.embedding.openai_http import OpenAIEmbedder
from npc_memory.embedding.settings import EmbeddingSettings
from npc_memory.engine import MemoryEngine
from npc_memory.errors import ConfigError, InputRejectedError, UnavailableError
from npc_memory.server import create_server
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc

if TYPE_CHECKING:
    Stub = svc_grpc.MemoryServiceAsyncStub

DIM = 384
TOO_LONG = '{"error": {"message": "input is too long for the model (max 512 tokens)"}}'


@dataclass
class Answer:
    """One scripted reply: a status and body, after a delay."""

    status: int = 200
    body: str = ""
    delay: float = 0.0


@dataclass
class Script:
    """Replies for the next calls, in order; the texts each call carried."""

    answers: list[Answer] = field(default_factory=list)
    seen: list[list[str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _handler(script: Script) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            texts = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["input"]
            with script.lock:
                script.seen.append(texts)
                answer = script.answers.pop(0) if script.answers else None
            if answer is None:  # unit vectors, one per text
                vectors = [{"index": i, "embedding": [1.0] + [0.0] * (DIM - 1)} for i in range(len(texts))]
                answer = Answer(200, json.dumps({"data": vectors}))
            time.sleep(answer.delay)
            body = answer.body.encode()
            self.send_response(answer.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            """Quiet: the test reports what matters."""

    return Handler


@pytest.fixture(scope="module")
def endpoint() -> Iterator[tuple[str, Script]]:
    """The scripted endpoint's base URL and its script."""
    script = Script()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(script))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", script
    server.shutdown()
    server.server_close()


def _settings(url: str, dim: int = 0, timeout_seconds: float = 2.0) -> EmbeddingSettings:
    return EmbeddingSettings(kind="openai", url=url, model="multilingual-e5-small", dim=dim,
                             timeout_seconds=timeout_seconds)


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
async def test_refused_probe_at_start_is_a_configuration_error(endpoint: tuple[str, Script], status: int) -> None:
    """A 4xx to the start-up probe means URL, model or key are wrong: ConfigError, the service does not start."""
    url, script = endpoint
    script.answers[:] = [Answer(status, '{"error": "model not found"}')]
    with pytest.raises(ConfigError, match=f"start-up probe: {status}"):
        await OpenAIEmbedder.connect(_settings(url))


async def test_endpoint_down_at_start_is_unavailable_not_configuration(endpoint: tuple[str, Script]) -> None:
    """A 503 to the probe is the endpoint's passing state, not a wrong setting."""
    url, script = endpoint
    script.answers[:] = [Answer(503, "overloaded")]
    with pytest.raises(UnavailableError):
        await OpenAIEmbedder.connect(_settings(url))


@pytest.mark.parametrize(
    ("status", "error"),
    [
        pytest.param(400, InputRejectedError, id="400-input"),
        pytest.param(413, InputRejectedError, id="413-too-large"),
        pytest.param(422, InputRejectedError, id="422-unprocessable"),
        pytest.param(401, UnavailableError, id="401-key-revoked"),
        pytest.param(403, UnavailableError, id="403-forbidden"),
        pytest.param(404, UnavailableError, id="404-model-gone"),
        pytest.param(429, UnavailableError, id="429-rate-limited"),
        pytest.param(500, UnavailableError, id="500"),
        pytest.param(503, UnavailableError, id="503"),
    ],
)
async def test_refusal_during_a_request_is_never_a_configuration_error(
    endpoint: tuple[str, Script], status: int, error: type[Exception]
) -> None:
    """After start a refused text is the caller's (InputRejectedError); any other 4xx/5xx is UnavailableError."""
    url, script = endpoint
    embedder = await OpenAIEmbedder.connect(_settings(url))
    try:
        script.answers[:] = [Answer(status, TOO_LONG)]
        with pytest.raises(error) as err:
            await embedder.embed_passages(["고양이를 좋아함"])
        assert not isinstance(err.value, ConfigError)
        assert str(status) in str(err.value)
        (vector,) = await embedder.embed_passages(["고양이를 좋아함"])  # the next call is served again
        assert vector.shape == (DIM,)
    finally:
        await embedder.aclose()


async def test_slow_endpoint_is_unavailable(endpoint: tuple[str, Script]) -> None:
    """An answer later than timeout_seconds is UnavailableError."""
    url, script = endpoint
    embedder = await OpenAIEmbedder.connect(_settings(url, dim=DIM, timeout_seconds=0.3))
    try:
        script.answers[:] = [Answer(delay=1.0)]
        started = time.monotonic()
        with pytest.raises(UnavailableError):
            await embedder.embed_queries(["안녕"])
        assert time.monotonic() - started < 0.9
    finally:
        await embedder.aclose()


@pytest_asyncio.fixture(scope="module")
async def scripted_stub(engine: MemoryEngine, endpoint: tuple[str, Script]) -> AsyncIterator[Stub]:
    """A second server over the test database whose embedder is the scripted endpoint."""
    url, _script = endpoint
    embedder = await OpenAIEmbedder.connect(_settings(url, dim=DIM))
    server, port, _ = await create_server(replace(engine, embedder=embedder), "127.0.0.1:0")
    await server.start()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        yield svc_grpc.MemoryServiceStub(channel)
    await server.stop(0)
    await embedder.aclose()


def _violations(err: grpc.aio.AioRpcError) -> dict[str, str]:
    status = rpc_status.from_call(err)
    assert status is not None
    out: dict[str, str] = {}
    for detail in status.details:
        bad = error_details_pb2.BadRequest()
        assert detail.Unpack(bad)
        out.update({v.field: v.description for v in bad.field_violations})
    return out


def _refused_text(err: grpc.aio.AioRpcError, field_: str) -> str:
    """Check the call was INVALID_ARGUMENT naming only ``field_`` with the endpoint's words; its description."""
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, field_
    violations = _violations(err)
    assert list(violations) == [field_]
    assert "413" in violations[field_]
    assert "too long" in violations[field_]
    return violations[field_]


def _fact(content: str) -> pb.MemoryInput:
    return pb.MemoryInput(speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, content=content)


def _scope(scope: Scope) -> pb.Scope:
    return pb.Scope(user_id=scope.user_id, heroine_id=scope.heroine_id)


async def test_refused_texts_are_invalid_argument_naming_the_text(
    scripted_stub: Stub, stub: Stub, endpoint: tuple[str, Script], scope: Scope
) -> None:
    """Store (one fact, a batch), search and a content edit each name the refused text; nothing is written."""
    _url, script = endpoint
    vector = [1.0] + [0.0] * (DIM - 1)
    stores = {
        "memories[1].content": [
            pb.MemoryInput(speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, content="벡터 있음", embedding=vector),
            _fact("아주 긴 글"),
        ],
        "memories": [_fact("첫 번째 글"), _fact("두 번째 글")],
    }
    descriptions = {}
    for field_, memories in stores.items():
        script.answers[:] = [Answer(413, TOO_LONG)]
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await scripted_stub.StoreMemories(svc.StoreMemoriesRequest(scope=_scope(scope), memories=memories))
        descriptions[field_] = _refused_text(err.value, field_)
    script.answers[:] = [Answer(413, TOO_LONG)]
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await scripted_stub.SearchMemories(svc.SearchMemoriesRequest(scope=_scope(scope), query="아주 긴 질문"))
    _refused_text(err.value, "query")
    assert descriptions["memories"].endswith("(the text of one of memories[0], memories[1])")
    stored = await stub.StoreMemories(svc.StoreMemoriesRequest(scope=_scope(scope), memories=[_fact("고양이")]))
    script.answers[:] = [Answer(413, TOO_LONG)]
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await scripted_stub.UpdateMemory(svc.UpdateMemoryRequest(
            scope=_scope(scope), memory_id=stored.results[0].memory_id, content="아주 긴 새 글",
            update_mask=field_mask_pb2.FieldMask(paths=["content"])))
    _refused_text(err.value, "content")
    listed = await stub.ListMemories(svc.ListMemoriesRequest(scope=_scope(scope), include_invalidated=True))
    assert [m.content for m in listed.memories] == ["고양이"]


async def test_endpoint_failure_during_a_store_is_unavailable(
    scripted_stub: Stub, endpoint: tuple[str, Script], scope: Scope
) -> None:
    """A 401 (key revoked since start) answers UNAVAILABLE, not FAILED_PRECONDITION, and writes nothing."""
    _url, script = endpoint
    script.answers[:] = [Answer(401, '{"error": "invalid api key"}')]
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await scripted_stub.StoreMemories(svc.StoreMemoriesRequest(scope=_scope(scope), memories=[_fact("고양이")]))
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE
    listed = await scripted_stub.ListMemories(svc.ListMemoriesRequest(scope=_scope(scope), include_invalidated=True))
    assert list(listed.memories) == []
