"""Export and import: a rich player moved into a fresh database answers every read RPC the same, through live servers.

The source is the run's database behind the live server with extraction (a scripted chat endpoint); the target is a
new database on the same PostgreSQL, served by a second live server on the same embedder.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import grpc
import pytest
import pytest_asyncio
from chat_endpoint import ChatEndpoint
from google.protobuf import field_mask_pb2
from npc_memory.config import Config, DatabaseConfig
from npc_memory.config.extraction import ExtractionSettings
from npc_memory.engine import MemoryEngine
from npc_memory.engine.portable import import_players
from npc_memory.errors import FailedPreconditionError, InvalidArgumentError
from npc_memory.extraction.service import Extractor
from npc_memory.server import create_server
from npc_memory.server.runtime import build_engine, open_database
from npc_memory.store.pool import Database
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc
from own_database import separate_database
from rich_player import answers, counts, exported, fact, ids_of, rich_player, store

if TYPE_CHECKING:
    Stub = svc_grpc.MemoryServiceAsyncStub

COMMAND = (sys.executable, "-m", "npc_memory.cli")
SECRET = "다른 플레이어의 비밀: 레티아의 생일은 5월 3일"


@dataclass
class Target:
    """A fresh database, migrated, with a pool on it and a live server over an engine on it."""

    url: str
    db: Database
    stub: Stub


@pytest_asyncio.fixture
async def target(config: Config, engine: MemoryEngine, chat: ChatEndpoint) -> AsyncIterator[Target]:
    """A new empty database served by a second live server (same embedder and settings as the source)."""
    assert config.database.url is not None
    with separate_database(config.database.url, "npc_import") as url:
        async with open_database(DatabaseConfig(url=url, pool_min=1, pool_max=4)) as db:
            other = await build_engine(replace(config, database=DatabaseConfig(url=url)), db, engine.embedder)
            extractor = Extractor.create(other, ExtractionSettings(url=chat.url, model="scripted"))
            server, port, _ = await create_server(other, "127.0.0.1:0", extractor=extractor)
            await server.start()
            try:
                async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                    yield Target(url, db, svc_grpc.MemoryServiceStub(channel))
            finally:
                await server.stop(0)
                await extractor.aclose()
                if other.scope_cache is not None:
                    await other.scope_cache.close()


@pytest.fixture
def player() -> str:
    """A player no other test uses."""
    return f"player-{uuid.uuid4().hex[:10]}"


async def test_round_trip_answers_every_read_the_same(
    ex_stub: Stub, chat: ChatEndpoint, engine: MemoryEngine, config: Config, target: Target, player: str,
) -> None:
    """A rich player exported and imported into an empty database answers every read RPC exactly as before."""
    await rich_player(ex_stub, chat, player)
    source_url = config.database.url
    assert source_url is not None
    ids, jobs = ids_of(source_url, player)
    source_rows = counts(source_url, player)
    assert source_rows["memory_changes"] > 0
    assert source_rows["memory_links"] > 0
    assert source_rows["timelines"] == 1
    assert len(jobs) == 1
    assert len(ids) >= 8
    lines = await exported(engine.db, player)
    moved = await import_players(target.db, lines)
    assert (moved.players, moved.records) == (1, len(lines) - 2)
    assert counts(target.url) == source_rows
    before = await answers(ex_stub, player, ids, jobs)
    after = await answers(target.stub, player, ids, jobs)
    assert before.keys() == after.keys()
    for key in before:
        assert after[key] == before[key], key
    # Read back out, the target gives the same file (but for the header's moment).
    assert (await exported(target.db, player))[1:] == lines[1:]
    # A change made after the import outranks the imported ones (the entries' sequence moved past them).
    letia = pb.Scope(user_id=player, heroine_id="letia")
    listed = await target.stub.ListMemories(svc.ListMemoriesRequest(scope=letia))
    (market,) = [m.memory_id for m in listed.memories if m.content == "레티아와 시장에 갔음"]
    await target.stub.UpdateMemory(svc.UpdateMemoryRequest(
        scope=letia, memory_id=market, importance=3, update_mask=field_mask_pb2.FieldMask(paths=["importance"])))
    got = await target.stub.GetMemory(svc.GetMemoryRequest(scope=letia, memory_id=market))
    assert got.memory.importance == 3


async def test_export_holds_only_that_player(ex_stub: Stub, chat: ChatEndpoint, engine: MemoryEngine,
                                             player: str) -> None:
    """One player's export never carries another's rows, even one with the same heroines."""
    await rich_player(ex_stub, chat, player)
    other = f"{player}-other"
    await store(ex_stub, other, "letia", fact(SECRET, 1))
    lines = await exported(engine.db, player)
    records = [json.loads(line) for line in lines[1:-1]]
    assert records
    assert {r["user_id"] for r in records} == {player}
    assert all(SECRET not in line and other not in line for line in lines)
    turns = sorted((r["dialogue_position"], r["speaker_name"]) for r in records if r.get("dialogue_id") == "talk-1")
    assert turns == [(0, None), (1, "레티아")]
    nobody = await exported(engine.db, f"{player}-nobody")
    assert [json.loads(line)["kind"] for line in nobody] == ["header", "end"]
    assert {r["kind"] for r in records} >= {"memory", "change", "link", "timeline", "save_point", "player_state",
                                           "extraction_job", "store_request"}


def _broken(lines: list[str]) -> dict[str, tuple[list[str], str]]:
    """Files that must be refused whole, with the line and field the error must name."""
    memory_at = next(i for i, line in enumerate(lines) if '"kind" : "memory"' in line)
    link_at = next(i for i, line in enumerate(lines) if '"kind" : "link"' in line)

    def edit(at: int, **changes: Any) -> list[str]:
        record = json.loads(lines[at]) | changes
        return [*lines[:at], json.dumps(record, ensure_ascii=False), *lines[at + 1:]]

    return {
        "cut at a line's end": (lines[:-1], f"line {len(lines)}: (line)"),
        "cut inside a line": ([*lines[:-3], lines[-3][: len(lines[-3]) // 2]], f"line {len(lines) - 2}: (line)"),
        "a field of the wrong type": (edit(memory_at, importance="high"), f"line {memory_at + 1}: importance"),
        "a vector of another size": (edit(memory_at, embedding=[0.5, 0.25]), f"line {memory_at + 1}: embedding"),
        "a link to no memory": (edit(link_at, to_id=str(uuid.uuid4())), f"line {link_at + 1}: to_id"),
        "a value the database refuses": (edit(memory_at, importance=11), f"line {memory_at + 1}: memory.importance"),
        "an unknown kind": (edit(memory_at, kind="memoir"), f"line {memory_at + 1}: kind"),
    }


async def test_a_file_that_cannot_load_whole_writes_nothing(
    ex_stub: Stub, chat: ChatEndpoint, engine: MemoryEngine, target: Target, player: str,
) -> None:
    """A cut-off or corrupt file is refused with its line and field named, and the database stays empty."""
    await rich_player(ex_stub, chat, player)
    lines = await exported(engine.db, player)
    empty = counts(target.url)
    for case, (broken, named) in _broken(lines).items():
        with pytest.raises(InvalidArgumentError) as refused:
            await import_players(target.db, broken)
        assert refused.value.violations[0].field == named, case
        assert counts(target.url) == empty, case
    assert all(n == 0 for n in empty.values())


async def test_a_player_already_held_is_refused_unless_replaced(
    ex_stub: Stub, chat: ChatEndpoint, engine: MemoryEngine, target: Target, player: str,
) -> None:
    """Importing a player the database holds is refused and writes nothing; --replace erases the old rows first."""
    await rich_player(ex_stub, chat, player)
    lines = await exported(engine.db, player)
    await import_players(target.db, lines)
    await store(target.stub, player, "letia", fact("가져온 뒤에 새로 저장함", 9))
    held = counts(target.url)
    with pytest.raises(FailedPreconditionError, match="--replace"):
        await import_players(target.db, lines)
    assert counts(target.url) == held
    await import_players(target.db, lines, replace=True)
    assert counts(target.url)["user_memories"] == held["user_memories"] - 1
    assert (await exported(target.db, player))[1:] == lines[1:]


async def test_the_command_moves_every_player(
    ex_stub: Stub, chat: ChatEndpoint, engine: MemoryEngine, target: Target, player: str,
    tmp_path: Any, config: Config,
) -> None:
    """``npc-memory export --all`` writes JSON Lines (progress on standard error); ``import FILE`` loads it."""
    await rich_player(ex_stub, chat, player)
    await import_players(target.db, await exported(engine.db, player))
    assert config.database.url is not None
    with separate_database(config.database.url, "npc_import_cli") as url:
        dump = tmp_path / "all.jsonl"
        with dump.open("w") as out:
            done = await asyncio.to_thread(
                subprocess.run, [*COMMAND, "export", "--all", "--database-url", target.url], stdout=out,
                stderr=subprocess.PIPE, text=True, check=True, timeout=120)
        assert "exporting" in done.stderr
        assert "1/1" in done.stderr
        text = dump.read_text(encoding="utf-8")
        assert all(json.loads(line)["kind"] for line in text.splitlines())
        loaded = await asyncio.to_thread(subprocess.run, [*COMMAND, "import", str(dump), "--database-url", url],
                                         capture_output=True, text=True, check=True, timeout=120)
        assert "imported" in loaded.stdout
        assert counts(url) == counts(target.url)
        again = await asyncio.to_thread(subprocess.run, [*COMMAND, "import", "-", "--database-url", url],
                                        input=text, capture_output=True, text=True, check=False, timeout=120)
        assert again.returncode == 2
        assert "--replace" in again.stderr
