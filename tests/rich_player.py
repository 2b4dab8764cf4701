"""A rich player made over gRPC, and every read RPC's answers about them: what export and import must keep.

Shared by the single-node round trip (tests/api/test_export_import.py) and the Citus one (tests/scale).
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import grpc
import psycopg
from chat_endpoint import ChatEndpoint, facts_answer
from google.protobuf import field_mask_pb2, json_format, timestamp_pb2
from npc_memory.engine.portable import export_players
from npc_memory.store.pool import Database
from npc_memory_client.v1 import context_pb2 as ctx
from npc_memory_client.v1 import extraction_pb2 as ex
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc

if TYPE_CHECKING:
    from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc

    Stub = svc_grpc.MemoryServiceAsyncStub

NOW = datetime(2026, 4, 1, 12, tzinfo=UTC)
TABLES = ("user_memories", "memory_changes", "memory_links", "expand_state", "timelines", "player_state",
          "save_points", "extraction_jobs", "store_requests")


def ts(at: datetime) -> timestamp_pb2.Timestamp:
    """A protobuf timestamp of ``at``."""
    made = timestamp_pb2.Timestamp()
    made.FromDatetime(at)
    return made


def fact(content: str, day: int, **kw: Any) -> pb.MemoryInput:
    """A fact about the player, valid from 9:00 on day ``day`` of March 2026."""
    return pb.MemoryInput(speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, subject_id="user", content=content,
                          importance=6, valid_at=ts(datetime(2026, 3, day, 9, tzinfo=UTC)), **kw)


async def store(stub: Stub, user: str, heroine: str, *facts: pb.MemoryInput) -> list[str]:
    """Store facts in one request (with a request id); their memory ids."""
    done = await stub.StoreMemories(svc.StoreMemoriesRequest(
        scope=pb.Scope(user_id=user, heroine_id=heroine), memories=list(facts), request_id=uuid.uuid4().hex))
    return [r.memory_id for r in done.results]


async def rich_player(stub: Stub, chat: ChatEndpoint, user: str) -> None:
    """Two heroines; closed, edited and shared rows; links; saves, a loaded timeline; a dialogue; an extraction job."""
    letia = pb.Scope(user_id=user, heroine_id="letia")
    cat, rain, market = await store(
        stub, user, "letia", fact("고양이를 좋아함", 1, slot="favorite_animal"), fact("비 오는 날을 싫어함", 2),
        fact("레티아와 시장에 갔음", 3, related=[pb.MemoryRef(batch_index=1)],
              metadata=json_format.ParseDict({"place": "market", "mood": 0.75}, pb.Memory().metadata)))
    await store(stub, user, "letia", fact("강아지를 좋아함", 4, slot="favorite_animal"))
    await stub.InvalidateMemory(svc.InvalidateMemoryRequest(scope=letia, memory_id=rain))
    await store(stub, user, "roco", fact("로코에게 꽃을 선물했음", 2), fact(
        "매운 음식을 잘 먹음", 3, visibility=pb.VISIBILITY_SHARED, parents=[pb.MemoryRef(batch_index=0)]))
    await stub.ExpandMemory(svc.ExpandMemoryRequest(scope=letia, memory_id=cat))
    await stub.CreateSavePoint(svc.CreateSavePointRequest(user_id=user, save_id="slot-1"))
    late = await store(stub, user, "letia", fact("레티아에게 고백했음", 5))
    await stub.UpdateMemory(svc.UpdateMemoryRequest(
        scope=letia, memory_id=late[0], importance=9, update_mask=field_mask_pb2.FieldMask(paths=["importance"])))
    await stub.LoadSavePoint(svc.LoadSavePointRequest(user_id=user, save_id="slot-1"))
    await stub.UpdateMemory(svc.UpdateMemoryRequest(
        scope=letia, memory_id=market, importance=8, update_mask=field_mask_pb2.FieldMask(paths=["importance"])))
    await store(stub, user, "letia", fact("레티아와 바다에 갔음", 6))
    await stub.StoreDialogue(svc.StoreDialogueRequest(scope=letia, dialogue=ex.Dialogue(dialogue_id="talk-1", turns=[
        ex.DialogueTurn(speaker=pb.SPEAKER_USER, text="오늘 바다 예뻤지?", game_time=ts(NOW)),
        ex.DialogueTurn(speaker=pb.SPEAKER_HEROINE, speaker_name="레티아", text="응, 또 가자!", game_time=ts(NOW))])))
    chat.play(facts_answer({"speaker": "user", "subject": "user", "subject_id": "user", "content_type": "preference",
                            "content": "겨울을 좋아함", "importance": 5, "slot": "favorite_season"}))
    await stub.ExtractMemories(ex.ExtractMemoriesRequest(scope=letia, mode=ex.EXTRACTION_MODE_SYNC,
                                                         dialogue=ex.Dialogue(dialogue_id="d-1", turns=[
        ex.DialogueTurn(speaker=pb.SPEAKER_USER, text="나는 겨울이 좋아", game_time=ts(NOW))])))


async def answer(call: Awaitable[Any]) -> dict[str, Any]:
    """A response as a dict, or the status it failed with (a row of another timeline is NOT_FOUND on both sides)."""
    try:
        return json_format.MessageToDict(await call)
    except grpc.aio.AioRpcError as exc:
        return {"status": exc.code().name, "details": exc.details()}


async def answers(stub: Stub, user: str, ids: list[tuple[str, str]], jobs: list[str]) -> dict[str, Any]:
    """What every read RPC answers about the player: by memory, by heroine, and for the player."""
    out: dict[str, Any] = {}
    out["saves"] = await answer(stub.ListSavePoints(svc.ListSavePointsRequest(user_id=user)))
    for heroine in ("letia", "roco"):
        scope = pb.Scope(user_id=user, heroine_id=heroine)
        for timeline in (0, 1):
            out[f"list {heroine} {timeline}"] = await answer(stub.ListMemories(svc.ListMemoriesRequest(
                scope=scope, timeline_id=timeline, include_invalidated=True, include_shared=True)))
            for query in ("고양이", "레티아와 어디에 갔지?"):
                searched = stub.SearchMemories(svc.SearchMemoriesRequest(
                    scope=scope, query=query, now=ts(NOW), hops=1, include_shared=True, timeline_id=timeline))
                out[f"search {heroine} {timeline} {query}"] = await answer(searched)
        out[f"history {heroine}"] = await answer(stub.GetMemoryHistory(svc.GetMemoryHistoryRequest(
            scope=scope, subject_id="user")))
        out[f"context {heroine}"] = await answer(stub.BuildContext(ctx.BuildContextRequest(
            scope=scope, utterance="우리 뭐 했었지?", token_budget=400, include_shared=True, now=ts(NOW))))
    for heroine, memory_id in ids:
        scope = pb.Scope(user_id=user, heroine_id=heroine)
        for timeline in (0, 1):
            out[f"get {memory_id} {timeline}"] = await answer(stub.GetMemory(svc.GetMemoryRequest(
                scope=scope, memory_id=memory_id, timeline_id=timeline)))
            out[f"chain {memory_id} {timeline}"] = await answer(stub.GetMemoryHistory(svc.GetMemoryHistoryRequest(
                scope=scope, memory_id=memory_id, timeline_id=timeline)))
        links = stub.ListLinks(svc.ListLinksRequest(scope=scope, memory_id=memory_id))
        out[f"links {memory_id}"] = await answer(links)
    for job in jobs:
        out[f"job {job}"] = await answer(stub.GetExtractionJob(ex.GetExtractionJobRequest(user_id=user, job_id=job)))
    return out


def counts(url: str, user: str | None = None) -> dict[str, int]:
    """Rows per player table: the player's, or every player's (None)."""
    with psycopg.connect(url) as conn:
        return {t: conn.execute(f"SELECT count(*) FROM {t} WHERE %s::text IS NULL OR user_id = %s",
                                (user, user)).fetchone()[0]  # type: ignore[index]
                for t in TABLES}


async def exported(db: Database, user: str | None) -> list[str]:
    """The export of one player (or every one) as its lines."""
    lines: list[str] = []
    await export_players(db, user, lines.append)
    return "".join(lines).splitlines()


def ids_of(url: str, user: str) -> tuple[list[tuple[str, str]], list[str]]:
    """The player's memories as (heroine, id), and their extraction jobs' ids."""
    with psycopg.connect(url) as conn:
        ids = [(h, str(i)) for h, i in conn.execute(
            "SELECT heroine_id, id FROM user_memories WHERE user_id = %s ORDER BY id", (user,))]
        jobs = [str(j) for (j,) in conn.execute("SELECT job_id FROM extraction_jobs WHERE user_id = %s", (user,))]
    return ids, jobs
