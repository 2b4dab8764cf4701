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
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import grpc
import psycopg
import pytest
import pytest_asyncio
from chat_endpoint import ChatEndpoint, facts_answer
from google.protobuf import field_mask_pb2, json_format, timestamp_pb2
from npc_memory.config import Config, DatabaseConfig
from npc_memory.engine import MemoryEngine
from npc_memory.engine.portable import export_players, import_players
from npc_memory.errors import FailedPreconditionError, InvalidArgumentError
from npc_memory.extraction.service import Extractor
from npc_memory.extraction.settings import ExtractionSettings
from npc_memory.server import create_server
from npc_memory.server.runtime import build_engine, open_database
from npc_memory.store.pool import Database
from npc_memory_client.v1 import context_pb2 as ctx
from npc_memory_client.v1 import extraction_pb2 as ex
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc
from own_database import separate_database

if TYPE_CHECKING:
    Stub = svc_grpc.MemoryServiceAsyncStub

NOW = datetime(2026, 4, 1, 12, tzinfo=UTC)
TABLES = ("user_memories", "memory_changes", "memory_links", "expand_state", "timelines", "player_state",
          "save_points", "extraction_jobs", "store_requests")
COMMAND = (sys.executable, "-m", "npc_memory.cli")
SECRET = "다른 플레이어의 비밀: 레티아의 생일은 5월 3일"


def _ts(at: datetime) -> timestamp_pb2.Timestamp:
    ts = timestamp_pb2.Timestamp()
    ts.FromDatetime(at)
    return ts


def _fact(content: str, day: int, **kw: Any) -> pb.MemoryInput:
    return pb.MemoryInput(speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, subject_id="user", content=content,
                          importance=6, valid_at=_ts(datetime(2026, 3, day, 9, tzinfo=UTC)), **kw)


async def _store(stub: Stub, user: str, heroine: str, *facts: pb.MemoryInput) -> list[str]:
    done = await stub.StoreMemories(svc.StoreMemoriesRequest(
        scope=pb.Scope(user_id=user, heroine_id=heroine), memories=list(facts), request_id=uuid.uuid4().hex))
    return [r.memory_id for r in done.results]


async def _rich_player(stub: Stub, chat: ChatEndpoint, user: str) -> None:
    """Two heroines, closed and edited rows, links, a shared fact, saves, a loaded timeline and an extraction job."""
    letia = pb.Scope(user_id=user, heroine_id="letia")
    cat, rain, _ = await _store(
        stub, user, "letia", _fact("고양이를 좋아함", 1, slot="favorite_animal"), _fact("비 오는 날을 싫어함", 2),
        _fact("레티아와 시장에 갔음", 3, related=[pb.MemoryRef(batch_index=1)],
              metadata=json_format.ParseDict({"place": "market", "mood": 0.75}, pb.Memory().metadata)))
    await _store(stub, user, "letia", _fact("강아지를 좋아함", 4, slot="favorite_animal"))
    await stub.InvalidateMemory(svc.InvalidateMemoryRequest(scope=letia, memory_id=rain))
    await _store(stub, user, "roco", _fact("로코에게 꽃을 선물했음", 2), _fact(
        "매운 음식을 잘 먹음", 3, visibility=pb.VISIBILITY_SHARED, parents=[pb.MemoryRef(batch_index=0)]))
    await stub.ExpandMemory(svc.ExpandMemoryRequest(scope=letia, memory_id=cat))
    await stub.CreateSavePoint(svc.CreateSavePointRequest(user_id=user, save_id="slot-1"))
    late = await _store(stub, user, "letia", _fact("레티아에게 고백했음", 5))
    await stub.UpdateMemory(svc.UpdateMemoryRequest(
        scope=letia, memory_id=late[0], importance=9, update_mask=field_mask_pb2.FieldMask(paths=["importance"])))
    await stub.LoadSavePoint(svc.LoadSavePointRequest(user_id=user, save_id="slot-1"))
    await _store(stub, user, "letia", _fact("레티아와 바다에 갔음", 6))
    chat.play(facts_answer({"speaker": "user", "subject": "user", "subject_id": "user", "content_type": "preference",
                            "content": "겨울을 좋아함", "importance": 5, "slot": "favorite_season"}))
    await stub.ExtractMemories(ex.ExtractMemoriesRequest(scope=letia, mode=ex.EXTRACTION_MODE_SYNC,
                                                         dialogue=ex.Dialogue(dialogue_id="d-1", turns=[
        ex.DialogueTurn(speaker=pb.SPEAKER_USER, text="나는 겨울이 좋아", game_time=_ts(NOW))])))


async def _answer(call: Awaitable[Any]) -> dict[str, Any]:
    """A response as a dict, or the status it failed with (a row of another timeline is NOT_FOUND on both sides)."""
    try:
        return json_format.MessageToDict(await call)
    except grpc.aio.AioRpcError as exc:
        return {"status": exc.code().name, "details": exc.details()}


async def _answers(stub: Stub, user: str, ids: list[tuple[str, str]], jobs: list[str]) -> dict[str, Any]:
    """What every read RPC answers about the player: by memory, by heroine, and for the player."""
    out: dict[str, Any] = {}
    out["saves"] = await _answer(stub.ListSavePoints(svc.ListSavePointsRequest(user_id=user)))
    for heroine in ("letia", "roco"):
        scope = pb.Scope(user_id=user, heroine_id=heroine)
        for timeline in (0, 1):
            out[f"list {heroine} {timeline}"] = await _answer(stub.ListMemories(svc.ListMemoriesRequest(
                scope=scope, timeline_id=timeline, include_invalidated=True, include_shared=True)))
            for query in ("고양이", "레티아와 어디에 갔지?"):
                searched = stub.SearchMemories(svc.SearchMemoriesRequest(
                    scope=scope, query=query, now=_ts(NOW), hops=1, include_shared=True, timeline_id=timeline))
                out[f"search {heroine} {timeline} {query}"] = await _answer(searched)
        out[f"history {heroine}"] = await _answer(stub.GetMemoryHistory(svc.GetMemoryHistoryRequest(
            scope=scope, subject_id="user")))
        out[f"context {heroine}"] = await _answer(stub.BuildContext(ctx.BuildContextRequest(
            scope=scope, utterance="우리 뭐 했었지?", token_budget=400, include_shared=True, now=_ts(NOW))))
    for heroine, memory_id in ids:
        scope = pb.Scope(user_id=user, heroine_id=heroine)
        for timeline in (0, 1):
            out[f"get {memory_id} {timeline}"] = await _answer(stub.GetMemory(svc.GetMemoryRequest(
                scope=scope, memory_id=memory_id, timeline_id=timeline)))
            out[f"chain {memory_id} {timeline}"] = await _answer(stub.GetMemoryHistory(svc.GetMemoryHistoryRequest(
                scope=scope, memory_id=memory_id, timeline_id=timeline)))
        links = stub.ListLinks(svc.ListLinksRequest(scope=scope, memory_id=memory_id))
        out[f"links {memory_id}"] = await _answer(links)
    for job in jobs:
        out[f"job {job}"] = await _answer(stub.GetExtractionJob(ex.GetExtractionJobRequest(user_id=user, job_id=job)))
    return out


def _counts(url: str, user: str | None = None) -> dict[str, int]:
    with psycopg.connect(url) as conn:
        return {t: conn.execute(f"SELECT count(*) FROM {t} WHERE %s::text IS NULL OR user_id = %s",
                                (user, user)).fetchone()[0]  # type: ignore[index]
                for t in TABLES}


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


async def _exported(db: Database, user: str | None) -> list[str]:
    lines: list[str] = []
    await export_players(db, user, lines.append)
    return "".join(lines).splitlines()


def _ids(url: str, user: str) -> tuple[list[tuple[str, str]], list[str]]:
    with psycopg.connect(url) as conn:
        ids = [(h, str(i)) for h, i in conn.execute(
            "SELECT heroine_id, id FROM user_memories WHERE user_id = %s ORDER BY id", (user,))]
        jobs = [str(j) for (j,) in conn.execute("SELECT job_id FROM extraction_jobs WHERE user_id = %s", (user,))]
    return ids, jobs


@pytest.fixture
def player() -> str:
    """A player no other test uses."""
    return f"player-{uuid.uuid4().hex[:10]}"


async def test_round_trip_answers_every_read_the_same(
    ex_stub: Stub, chat: ChatEndpoint, engine: MemoryEngine, config: Config, target: Target, player: str,
) -> None:
    """A rich player exported and imported into an empty database answers every read RPC exactly as before."""
    await _rich_player(ex_stub, chat, player)
    source_url = config.database.url
    assert source_url is not None
    ids, jobs = _ids(source_url, player)
    counts = _counts(source_url, player)
    assert counts["memory_changes"] > 0
    assert counts["memory_links"] > 0
    assert counts["timelines"] == 1
    assert len(jobs) == 1
    assert len(ids) >= 8
    lines = await _exported(engine.db, player)
    moved = await import_players(target.db, lines)
    assert (moved.players, moved.records) == (1, len(lines) - 2)
    assert _counts(target.url) == counts
    before = await _answers(ex_stub, player, ids, jobs)
    after = await _answers(target.stub, player, ids, jobs)
    assert before.keys() == after.keys()
    for key in before:
        assert after[key] == before[key], key
    # Read back out, the target gives the same file (but for the header's moment).
    assert (await _exported(target.db, player))[1:] == lines[1:]


async def test_export_holds_only_that_player(ex_stub: Stub, chat: ChatEndpoint, engine: MemoryEngine,
                                             player: str) -> None:
    """One player's export never carries another's rows, even one with the same heroines."""
    await _rich_player(ex_stub, chat, player)
    other = f"{player}-other"
    await _store(ex_stub, other, "letia", _fact(SECRET, 1))
    lines = await _exported(engine.db, player)
    records = [json.loads(line) for line in lines[1:-1]]
    assert records
    assert {r["user_id"] for r in records} == {player}
    assert all(SECRET not in line and other not in line for line in lines)
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
    await _rich_player(ex_stub, chat, player)
    lines = await _exported(engine.db, player)
    empty = _counts(target.url)
    for case, (broken, named) in _broken(lines).items():
        with pytest.raises(InvalidArgumentError) as refused:
            await import_players(target.db, broken)
        assert refused.value.violations[0].field == named, case
        assert _counts(target.url) == empty, case
    assert all(n == 0 for n in empty.values())


async def test_a_player_already_held_is_refused_unless_replaced(
    ex_stub: Stub, chat: ChatEndpoint, engine: MemoryEngine, target: Target, player: str,
) -> None:
    """Importing a player the database holds is refused and writes nothing; --replace erases the old rows first."""
    await _rich_player(ex_stub, chat, player)
    lines = await _exported(engine.db, player)
    await import_players(target.db, lines)
    await _store(target.stub, player, "letia", _fact("가져온 뒤에 새로 저장함", 9))
    held = _counts(target.url)
    with pytest.raises(FailedPreconditionError, match="--replace"):
        await import_players(target.db, lines)
    assert _counts(target.url) == held
    await import_players(target.db, lines, replace=True)
    assert _counts(target.url)["user_memories"] == held["user_memories"] - 1
    assert (await _exported(target.db, player))[1:] == lines[1:]


async def test_the_command_moves_every_player(
    ex_stub: Stub, chat: ChatEndpoint, engine: MemoryEngine, target: Target, player: str,
    tmp_path: Any, config: Config,
) -> None:
    """``npc-memory export --all`` writes JSON Lines (progress on standard error); ``import FILE`` loads it."""
    await _rich_player(ex_stub, chat, player)
    await import_players(target.db, await _exported(engine.db, player))
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
        assert _counts(url) == _counts(target.url)
        again = await asyncio.to_thread(subprocess.run, [*COMMAND, "import", "-", "--database-url", url],
                                        input=text, capture_output=True, text=True, check=False, timeout=120)
        assert again.returncode == 2
        assert "--replace" in again.stderr
