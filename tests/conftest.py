"""Shared fixtures: a real PostgreSQL (embedded, or NPC_MEMORY_TEST_DATABASE_URL), the engine, a live gRPC server."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import grpc
import psycopg
import pytest
import pytest_asyncio
from chat_endpoint import ChatEndpoint, serve_chat
from npc_memory.config import Config, DatabaseConfig, SearchConfig
from npc_memory.config.extraction import ExtractionSettings
from npc_memory.domain.model import Scope
from npc_memory.engine import MemoryEngine
from npc_memory.extraction.service import Extractor
from npc_memory.ops.loop import loop_factory
from npc_memory.server import create_server
from npc_memory.server.runtime import open_engine
from npc_memory.store.embedded import EmbeddedPostgres
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc

ROOT = Path(__file__).resolve().parent.parent


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> dict[str, Callable[[], asyncio.AbstractEventLoop]]:
    """Every async test and fixture runs on the loop ``serve`` runs on by default (ops/loop.py: uvloop here)."""
    return {"serve-default": loop_factory("auto")}


@pytest.fixture(scope="session")
def database_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A fresh database for the run: a new database on the given server, or a new embedded server."""
    server_url = os.environ.get("NPC_MEMORY_TEST_DATABASE_URL")
    if not server_url:
        embedded = EmbeddedPostgres(tmp_path_factory.mktemp("pg"))
        yield embedded.url
        embedded.stop()
        return
    name = f"npc_memory_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')  # a generated name, not input
    yield psycopg.conninfo.make_conninfo(server_url, dbname=name)
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def config(database_url: str) -> Config:
    """The default configuration pointed at the test database, with BM25 as the keyword side.

    The test PostgreSQL carries PGroonga (scripts/build-extensions), which `auto` would pick; the suite's figures
    are BM25's, and tests/test_search_pgroonga.py switches to PGroonga where it means to.
    """
    return Config(database=DatabaseConfig(url=database_url, pool_min=1, pool_max=8),
                  search=SearchConfig(keyword_backend="bm25"))


@pytest_asyncio.fixture(scope="session")
async def engine(config: Config) -> AsyncIterator[MemoryEngine]:
    """The engine on the test database with the bundled local embedder, started as ``serve`` starts it."""
    async with open_engine(config) as eng:
        yield eng


@pytest_asyncio.fixture(scope="session")
async def server_port(engine: MemoryEngine) -> AsyncIterator[int]:
    """A live gRPC server on a free port, serving the engine."""
    server, port, _health = await create_server(engine, "127.0.0.1:0")
    await server.start()
    yield port
    await server.stop(0)


@pytest_asyncio.fixture(scope="session")
async def stub(server_port: int) -> AsyncIterator[svc_grpc.MemoryServiceAsyncStub]:
    """An async client stub connected to the live server."""
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server_port}") as channel:
        yield svc_grpc.MemoryServiceStub(channel)


@pytest.fixture
def scope() -> Scope:
    """A scope no other test uses: a fresh player with letia."""
    return Scope(user_id=f"player-{uuid.uuid4().hex[:10]}", heroine_id="letia")


@pytest.fixture(scope="session")
def chat() -> Iterator[ChatEndpoint]:
    """The scripted chat-completions endpoint for the run."""
    yield from serve_chat()


@pytest_asyncio.fixture(scope="session")
async def extractor(engine: MemoryEngine, chat: ChatEndpoint) -> AsyncIterator[Extractor]:
    """An extractor on the test engine, pointed at the scripted endpoint, with short timeouts and backoff."""
    settings = ExtractionSettings(url=chat.url, model="scripted", timeout_seconds=0.5, lease_seconds=5.0,
                                  max_attempts=3, backoff_seconds=0.05, backoff_max_seconds=0.2, poll_seconds=0.05)
    ext = Extractor.create(engine, settings)
    yield ext
    await ext.aclose()


@pytest_asyncio.fixture(scope="session")
async def ex_port(engine: MemoryEngine, extractor: Extractor) -> AsyncIterator[int]:
    """A live gRPC server with extraction on a free port, its worker running beside it, as ``serve`` runs them."""
    server, port, _health = await create_server(engine, "127.0.0.1:0", extractor=extractor)
    await server.start()
    worker = asyncio.create_task(extractor.work_forever())
    yield port
    worker.cancel()
    await server.stop(0)


@pytest_asyncio.fixture(scope="session")
async def ex_stub(ex_port: int) -> AsyncIterator[svc_grpc.MemoryServiceAsyncStub]:
    """An async stub connected to the server with extraction."""
    async with grpc.aio.insecure_channel(f"127.0.0.1:{ex_port}") as channel:
        yield svc_grpc.MemoryServiceStub(channel)
