"""Export and import on a Citus cluster: a player moved from single-node PostgreSQL into distributed tables, whole."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import grpc
import pytest
from chat_endpoint import ChatEndpoint
from citus_cluster import citus_database, running_cluster
from npc_memory.config import Config, DatabaseConfig
from npc_memory.config.extraction import ExtractionSettings
from npc_memory.engine import MemoryEngine
from npc_memory.engine.portable import import_players
from npc_memory.errors import FailedPreconditionError
from npc_memory.extraction.service import Extractor
from npc_memory.server import create_server
from npc_memory.server.runtime import build_engine, open_database
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc
from rich_player import answers, counts, exported, ids_of, rich_player

NPC_MEMORY = str(Path(sys.executable).with_name("npc-memory"))


@pytest.fixture(scope="module")
def citus_target() -> Iterator[str]:
    """A fresh database on the cluster of ``scripts/citus``, migrated with ``migrate --citus``: every table spread."""
    with running_cluster(), citus_database("npc_import") as url:
        env = {**os.environ, "NPC_MEMORY_DATABASE_URL": url, "NPC_MEMORY_LOG_LEVEL": "ERROR"}
        done = subprocess.run([NPC_MEMORY, "migrate", "--citus"], env=env, capture_output=True, text=True,
                              timeout=300, check=False)
        assert done.returncode == 0, done.stderr
        yield url


async def test_a_player_moves_into_a_citus_cluster_whole(
    ex_stub: svc_grpc.MemoryServiceAsyncStub, chat: ChatEndpoint, engine: MemoryEngine, config: Config,
    citus_target: str,
) -> None:
    """Imported into distributed tables, the player answers every read alike and exports back to the same lines."""
    player = f"player-{uuid.uuid4().hex[:10]}"
    await rich_player(ex_stub, chat, player)
    assert config.database.url is not None
    ids, jobs = ids_of(config.database.url, player)
    lines = await exported(engine.db, player)
    async with open_database(DatabaseConfig(url=citus_target, pool_min=1, pool_max=4)) as db:
        await import_players(db, lines)
        assert counts(citus_target, player) == counts(config.database.url, player)
        with pytest.raises(FailedPreconditionError):
            await import_players(db, lines)
        await import_players(db, lines, replace=True)  # the player's rows erased first, on every worker
        assert counts(citus_target, player) == counts(config.database.url, player)
        assert (await exported(db, player))[1:] == lines[1:]
        moved = replace(config, database=DatabaseConfig(url=citus_target),
                        search=replace(config.search, keyword_backend=engine.keyword_backend))
        other = await build_engine(moved, db, engine.embedder)
        extractor = Extractor.create(other, ExtractionSettings(url=chat.url, model="scripted"))
        server, port, _ = await create_server(other, "127.0.0.1:0", extractor=extractor)
        await server.start()
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                after = await answers(svc_grpc.MemoryServiceStub(channel), player, ids, jobs)
        finally:
            await server.stop(0)
            await extractor.aclose()
            if other.scope_cache is not None:
                await other.scope_cache.close()
    before = await answers(ex_stub, player, ids, jobs)
    assert before.keys() == after.keys()
    for key in before:
        assert after[key] == before[key], key
