"""Every RPC over gRPC on single-node PostgreSQL and on a Citus cluster (a coordinator and two workers).

Each backend gets a fresh database migrated by the real command (`npc-memory migrate`, or `migrate --citus` on the
cluster), then a live server with extraction over it, as `serve` runs. The Citus cluster is the one
``scripts/citus up`` starts from the Citus that ``scripts/build-extensions`` built.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import psycopg
import pytest
import pytest_asyncio
from chat_endpoint import ChatEndpoint, facts_answer
from citus_cluster import citus_database, running_cluster
from google.protobuf import field_mask_pb2
from npc_memory.config import Config, DatabaseConfig, SearchConfig
from npc_memory.config.extraction import ExtractionSettings
from npc_memory.extraction.service import Extractor
from npc_memory.server import create_server
from npc_memory.server.runtime import open_engine
from npc_memory_client.v1 import context_pb2 as ctx
from npc_memory_client.v1 import extraction_pb2 as ex
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc
from own_database import separate_database

NPC_MEMORY = str(Path(sys.executable).with_name("npc-memory"))
BACKENDS = ["single-node", "citus"]


@pytest.fixture(scope="session")
def citus_cluster() -> Iterator[None]:
    """The cluster ``scripts/citus up`` runs (stopped after the run if this started it)."""
    with running_cluster():
        yield


def _migrate(url: str, citus: bool) -> None:
    """Migrate with the real command, as an operator does on a fresh database."""
    env = {**os.environ, "NPC_MEMORY_DATABASE_URL": url, "NPC_MEMORY_LOG_LEVEL": "ERROR"}
    done = subprocess.run([NPC_MEMORY, "migrate", *(["--citus"] if citus else [])], env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module", params=BACKENDS)
def backend(request: pytest.FixtureRequest, database_url: str) -> Iterator[tuple[str, str]]:
    """The backend's name and a fresh migrated database: on the test server, or on the cluster, every table spread."""
    if request.param == "citus":
        request.getfixturevalue("citus_cluster")
        with citus_database("npc_rpc") as url:
            _migrate(url, citus=True)
            yield request.param, url
    else:
        with separate_database(database_url, "npc_rpc") as url:
            _migrate(url, citus=False)
            yield request.param, url


@dataclass(frozen=True)
class Served:
    """A live server with extraction over one backend's database."""

    stub: svc_grpc.MemoryServiceAsyncStub
    url: str
    backend: str


@pytest_asyncio.fixture(scope="module")
async def served(backend: tuple[str, str], chat: ChatEndpoint) -> AsyncIterator[Served]:
    """The engine, an extractor on the scripted chat endpoint and a gRPC server, on the backend's database."""
    name, backend_url = backend
    config = Config(database=DatabaseConfig(url=backend_url, pool_min=1, pool_max=8),
                  search=SearchConfig(keyword_backend="bm25"))
    settings = ExtractionSettings(url=chat.url, model="scripted", timeout_seconds=2.0, lease_seconds=5.0,
                                  max_attempts=3, backoff_seconds=0.05, backoff_max_seconds=0.2, poll_seconds=0.05)
    async with open_engine(config) as engine:
        extractor = Extractor.create(engine, settings)
        server, port, _health = await create_server(engine, "127.0.0.1:0", extractor=extractor)
        await server.start()
        worker = asyncio.create_task(extractor.work_forever())
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                yield Served(svc_grpc.MemoryServiceStub(channel), backend_url, name)
        finally:
            worker.cancel()
            await server.stop(0)
            await extractor.aclose()


def _player() -> str:
    return f"player-{uuid.uuid4().hex[:10]}"


def _scope(user_id: str, heroine: str = "letia") -> pb.Scope:
    return pb.Scope(user_id=user_id, heroine_id=heroine)


def _fact(content: str, **kw: Any) -> pb.MemoryInput:
    return pb.MemoryInput(speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, content=content, **kw)


async def _store(stub: svc_grpc.MemoryServiceAsyncStub, scope: pb.Scope, *facts: pb.MemoryInput,
                 request_id: str = "") -> list[pb.StoreResult]:
    done = await stub.StoreMemories(svc.StoreMemoriesRequest(scope=scope, memories=facts, request_id=request_id))
    return list(done.results)


async def _listed(stub: svc_grpc.MemoryServiceAsyncStub, scope: pb.Scope, **kw: Any) -> list[str]:
    page = await stub.ListMemories(svc.ListMemoriesRequest(scope=scope, **kw))
    return sorted(m.content for m in page.memories)


async def test_store_search_get_and_list(served: Served) -> None:
    """Stored facts come back by search (best first), by id and in the listing; another heroine sees none."""
    scope = _scope(_player())
    stored = await _store(served.stub, scope, _fact("고양이를 좋아함", importance=7), _fact("매운 음식을 못 먹음"))
    assert [r.outcome for r in stored] == [pb.STORE_OUTCOME_CREATED] * 2
    found = await served.stub.SearchMemories(svc.SearchMemoriesRequest(scope=scope, query="고양이 좋아해?"))
    assert found.results[0].memory.memory_id == stored[0].memory_id
    assert found.results[0].scores.keyword == 1.0
    got = await served.stub.GetMemory(svc.GetMemoryRequest(scope=scope, memory_id=stored[1].memory_id))
    assert got.memory.content == "매운 음식을 못 먹음"
    assert await _listed(served.stub, scope) == ["고양이를 좋아함", "매운 음식을 못 먹음"]
    assert await _listed(served.stub, _scope(scope.user_id, "roco")) == []


async def test_duplicates_supersession_and_a_repeated_request(served: Served) -> None:
    """The same fact twice is a duplicate; a new value of a slot supersedes the old; a repeated request id replays."""
    scope = _scope(_player())
    first = await _store(served.stub, scope, _fact("고양이를 좋아함", slot="favorite_animal"), request_id="r1")
    again = await _store(served.stub, scope, _fact("고양이를 좋아함", slot="favorite_animal"))
    assert [r.outcome for r in again] == [pb.STORE_OUTCOME_DUPLICATE]
    assert again[0].memory_id == first[0].memory_id
    replayed = await _store(served.stub, scope, _fact("고양이를 좋아함", slot="favorite_animal"), request_id="r1")
    assert replayed == first
    newer = await _store(served.stub, scope, _fact("강아지를 좋아함", slot="favorite_animal"))
    assert [(r.outcome, list(r.superseded_ids)) for r in newer] == [
        (pb.STORE_OUTCOME_SUPERSEDED, [first[0].memory_id])]
    assert await _listed(served.stub, scope) == ["강아지를 좋아함"]
    history = await served.stub.GetMemoryHistory(svc.GetMemoryHistoryRequest(
        scope=scope, subject_id="user", slot="favorite_animal"))
    assert [m.content for m in history.memories] == ["고양이를 좋아함", "강아지를 좋아함"]


async def test_update_and_invalidate(served: Served) -> None:
    """An update changes the masked field only; an invalidated memory leaves the listing but stays readable."""
    scope = _scope(_player())
    [kept, closed] = await _store(served.stub, scope, _fact("바다를 좋아함", importance=3), _fact("산을 싫어함"))
    updated = await served.stub.UpdateMemory(svc.UpdateMemoryRequest(
        scope=scope, memory_id=kept.memory_id, importance=9,
        update_mask=field_mask_pb2.FieldMask(paths=["importance"])))
    assert (updated.memory.importance, updated.memory.content) == (9, "바다를 좋아함")
    gone = await served.stub.InvalidateMemory(svc.InvalidateMemoryRequest(scope=scope, memory_id=closed.memory_id))
    assert gone.memory.HasField("invalid_at")
    assert await _listed(served.stub, scope) == ["바다를 좋아함"]
    assert await _listed(served.stub, scope, include_invalidated=True) == ["바다를 좋아함", "산을 싫어함"]


async def test_links_and_expansion(served: Served) -> None:
    """A parent given on the way in is listed; expanding a memory links the ones sharing its words, then lists them."""
    scope = _scope(_player())
    stored = await _store(
        served.stub, scope,
        _fact("바닷가에서 조개를 주움"),
        _fact("주운 조개로 목걸이를 만듦", parents=[pb.MemoryRef(batch_index=0)]),
        _fact("조개 요리를 좋아함"),
        _fact("산에서 버섯을 땀"),
    )
    beach, necklace, dish, _mushroom = (r.memory_id for r in stored)
    links = await served.stub.ListLinks(svc.ListLinksRequest(scope=scope, memory_id=necklace))
    assert [(k.to_memory_id, k.kind) for k in links.parents] == [(beach, pb.LINK_KIND_DERIVED_FROM)]
    first = await served.stub.ExpandMemory(svc.ExpandMemoryRequest(scope=scope, memory_id=beach))
    assert (first.memory_id, first.depth) == (beach, 1)
    assert dish in {k.to_memory_id for k in first.found}
    assert [m.memory_id for m in first.memories] == [k.to_memory_id for k in first.found]
    related = await served.stub.ListLinks(svc.ListLinksRequest(scope=scope, memory_id=beach))
    assert sorted(k.to_memory_id for k in related.related) == sorted(k.to_memory_id for k in first.found)
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await served.stub.ExpandMemory(svc.ExpandMemoryRequest(scope=_scope(_player()), memory_id=beach))
    assert err.value.code() == grpc.StatusCode.NOT_FOUND


async def test_save_points_timelines_and_changes_after_a_save(served: Served) -> None:
    """After a save, a change is recorded on the live timeline; loading the save brings back the earlier view."""
    user = _player()
    scope = _scope(user)
    [cat] = await _store(served.stub, scope, _fact("고양이를 좋아함", importance=4))
    saved = await served.stub.CreateSavePoint(svc.CreateSavePointRequest(user_id=user, save_id="before-the-beach"))
    assert saved.save_point.save_id == "before-the-beach"
    await _store(served.stub, scope, _fact("해변에서 수영함"))
    await served.stub.UpdateMemory(svc.UpdateMemoryRequest(
        scope=scope, memory_id=cat.memory_id, importance=8, update_mask=field_mask_pb2.FieldMask(paths=["importance"])))
    got = await served.stub.GetMemory(svc.GetMemoryRequest(scope=scope, memory_id=cat.memory_id))
    assert got.memory.importance == 8
    assert await _listed(served.stub, scope) == ["고양이를 좋아함", "해변에서 수영함"]
    loaded = await served.stub.LoadSavePoint(svc.LoadSavePointRequest(user_id=user, save_id="before-the-beach"))
    assert loaded.timeline.parent_timeline_id == saved.save_point.timeline_id
    assert await _listed(served.stub, scope) == ["고양이를 좋아함"]
    got = await served.stub.GetMemory(svc.GetMemoryRequest(scope=scope, memory_id=cat.memory_id))
    assert got.memory.importance == 4
    listed = await served.stub.ListSavePoints(svc.ListSavePointsRequest(user_id=user))
    assert listed.live_timeline_id == loaded.timeline.timeline_id
    assert [s.save_id for s in listed.save_points] == ["before-the-beach"]
    await served.stub.LoadSavePoint(svc.LoadSavePointRequest(user_id=user, save_id="before-the-beach"))
    dropped = await served.stub.DropTimeline(svc.DropTimelineRequest(user_id=user,
                                                                      timeline_id=loaded.timeline.timeline_id))
    assert dropped.deleted_memories == 0


async def test_extraction_and_the_job(served: Served, chat: ChatEndpoint) -> None:
    """A dialogue extracted synchronously stores its facts; the job reads back done."""
    scope = _scope(_player())
    chat.play(facts_answer(
        {"speaker": "user", "subject": "user", "subject_id": "user", "content_type": "preference",
         "content": "고양이를 좋아함", "importance": 6, "slot": "favorite_animal"}))
    job = (await served.stub.ExtractMemories(ex.ExtractMemoriesRequest(
        scope=scope, dialogue=ex.Dialogue(dialogue_id="d1", turns=[
            ex.DialogueTurn(speaker=pb.SPEAKER_USER, text="나는 고양이 좋아해")]),
        mode=ex.EXTRACTION_MODE_SYNC))).job
    assert job.state == ex.EXTRACTION_JOB_STATE_DONE
    assert [m.result.outcome for m in job.memories] == [pb.STORE_OUTCOME_CREATED]
    read = await served.stub.GetExtractionJob(ex.GetExtractionJobRequest(user_id=scope.user_id, job_id=job.job_id))
    assert read.job.state == ex.EXTRACTION_JOB_STATE_DONE
    assert await _listed(served.stub, scope) == ["고양이를 좋아함"]


async def test_a_dialogue_stored_in_two_requests_is_resent_linked_and_extracted(
    served: Served, chat: ChatEndpoint
) -> None:
    """StoreDialogue: turns are stored once (a resend answers the stored ones), linked, and extracted with links."""
    scope = _scope(_player())
    lines = [(pb.SPEAKER_HEROINE, "경주 다녀왔다며?"), (pb.SPEAKER_USER, "응, 지난 화요일에 불국사에 갔어"),
             (pb.SPEAKER_HEROINE, "사진 많이 찍었어?")]
    turns = [ex.DialogueTurn(speaker=s, text=t) for s, t in lines]

    def request(first: int, upto: int, extract: bool = False) -> svc.StoreDialogueRequest:
        return svc.StoreDialogueRequest(scope=scope, dialogue=ex.Dialogue(dialogue_id="trip", turns=turns[first:upto]),
                                        first_position=first, extract=extract)

    head = await served.stub.StoreDialogue(request(0, 2))
    assert [r.outcome for r in head.turns] == [pb.STORE_OUTCOME_CREATED] * 2
    resent = await served.stub.StoreDialogue(request(0, 2))
    assert [r.memory_id for r in resent.turns] == [r.memory_id for r in head.turns]
    chat.play(facts_answer(
        {"speaker": "user", "subject": "user", "subject_id": "user", "content_type": "event",
         "content": "지난 화요일에 경주 불국사에 다녀옴", "importance": 6, "slot": ""}))
    tail = await served.stub.StoreDialogue(request(2, 3, extract=True))
    job = tail.job
    async with asyncio.timeout(60):
        while job.state not in (ex.EXTRACTION_JOB_STATE_DONE, ex.EXTRACTION_JOB_STATE_FAILED):
            await asyncio.sleep(0.05)
            job = (await served.stub.GetExtractionJob(ex.GetExtractionJobRequest(user_id=scope.user_id,
                                                                                 job_id=job.job_id))).job
    assert job.state == ex.EXTRACTION_JOB_STATE_DONE, job.last_error
    [fact] = job.memories
    parents = await served.stub.ListLinks(svc.ListLinksRequest(scope=scope, memory_id=fact.result.memory_id))
    me = fact.result.memory_id
    linked = {k.to_memory_id if k.from_memory_id == me else k.from_memory_id for k in parents.parents}
    assert linked == {r.memory_id for r in (*head.turns, *tail.turns)}


async def test_build_context(served: Served) -> None:
    """The prompt block names what the player told the heroine."""
    scope = _scope(_player())
    await _store(served.stub, scope, _fact("고양이를 좋아함", importance=8))
    block = await served.stub.BuildContext(ctx.BuildContextRequest(scope=scope, utterance="무슨 동물 좋아해?",
                                                                   token_budget=200))
    assert "고양이를 좋아함" in block.text
    assert 0 < block.tokens <= 200


async def test_forget_player_deletes_every_scope_of_that_player_only(served: Served) -> None:
    """ForgetPlayer removes the player's memories with every heroine and nothing of another player."""
    user, other = _player(), _player()
    await _store(served.stub, _scope(user), _fact("고양이를 좋아함"))
    await _store(served.stub, _scope(user, "roco"), _fact("수영을 못함"))
    await served.stub.CreateSavePoint(svc.CreateSavePointRequest(user_id=user, save_id="s1"))
    await _store(served.stub, _scope(other), _fact("강아지를 좋아함"))
    forgotten = await served.stub.ForgetPlayer(svc.ForgetPlayerRequest(user_id=user))
    assert forgotten.deleted_memories == 2
    assert await _listed(served.stub, _scope(user)) == []
    assert await _listed(served.stub, _scope(user, "roco")) == []
    assert (await served.stub.ListSavePoints(svc.ListSavePointsRequest(user_id=user))).save_points == []
    assert await _listed(served.stub, _scope(other)) == ["강아지를 좋아함"]
    again = await _store(served.stub, _scope(user), _fact("고양이를 좋아함"))
    assert [r.outcome for r in again] == [pb.STORE_OUTCOME_CREATED]


ROWS_PER_NODE = """
SELECT nodeport, sum(result::bigint) FROM run_command_on_placements('user_memories', 'SELECT count(*) FROM %s')
GROUP BY nodeport ORDER BY nodeport
"""
WORKER_PORTS = "SELECT nodeport FROM pg_dist_node WHERE groupid <> 0 ORDER BY nodeport"
NOT_DISTRIBUTED = """
SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = current_schema() AND c.relkind = 'r' AND c.relname <> 'schema_migrations'
  AND NOT EXISTS (SELECT 1 FROM pg_dist_partition p WHERE p.logicalrelid = c.oid)
"""


async def test_the_rows_lie_where_the_backend_keeps_them(served: Served) -> None:
    """Single node: every stored row is in the table. Citus: every table is spread, the rows lie on both workers."""
    players = [_player() for _ in range(20)]
    for user in players:
        await _store(served.stub, _scope(user), _fact("고양이를 좋아함"))
    with psycopg.connect(served.url) as conn:
        stored = conn.execute("SELECT count(*) FROM user_memories WHERE user_id = ANY(%s)", (players,)).fetchone()
        assert stored == (20,)
        if served.backend == "citus":
            assert conn.execute(NOT_DISTRIBUTED).fetchall() == []
            workers = [port for (port,) in conn.execute(WORKER_PORTS).fetchall()]
            rows: dict[int, int] = dict(conn.execute(ROWS_PER_NODE).fetchall())
            assert sorted(rows) == workers  # every shard on a worker, none on the coordinator
            assert all(rows[port] > 0 for port in workers)


async def test_the_maintenance_commands_run_over_every_player(served: Served) -> None:
    """`retain`, `retokenize` and `reembed` walk every player's rows (on Citus: every shard) and finish cleanly."""
    await _store(served.stub, _scope(_player()), _fact("고양이를 좋아함"), request_id="maintenance")
    with psycopg.connect(served.url) as conn:
        rows = conn.execute("SELECT count(*) FROM user_memories").fetchone()
    assert rows is not None
    assert rows[0] > 0
    env = {**os.environ, "NPC_MEMORY_DATABASE_URL": served.url, "NPC_MEMORY_LOG_LEVEL": "ERROR"}
    for command, done_line in [("retain", "retired "), ("retokenize", f"re-tokenised {rows[0]} row(s)"),
                               ("reembed", f"re-embedded {rows[0]} row(s)")]:
        done = await asyncio.to_thread(subprocess.run, [NPC_MEMORY, command], env=env, capture_output=True,
                                       text=True, timeout=300, check=False)
        assert done.returncode == 0, done.stderr
        assert done_line in done.stdout, (command, done.stdout)
