"""Shared knowledge across a player's heroines.

A memory stored as shared is visible to the player's other heroines only when asked, marked with the heroine
who heard it; a private memory never crosses to another scope on any read.
"""

from __future__ import annotations

import uuid

import pytest
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc

PRIVATE = "로코에게만 말한 비밀: 고양이 알레르기가 있음"
SHARED = "플레이어의 이름은 민준임"


@pytest.fixture
def player() -> str:
    """A fresh player id."""
    return f"player-{uuid.uuid4().hex[:10]}"


async def _store(stub: svc_grpc.MemoryServiceAsyncStub, user_id: str, heroine: str) -> None:
    await stub.StoreMemories(svc.StoreMemoriesRequest(scope=pb.Scope(user_id=user_id, heroine_id=heroine), memories=[
        pb.MemoryInput(speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, content=PRIVATE, importance=9),
        pb.MemoryInput(speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, content=SHARED, importance=8,
                       content_type=pb.CONTENT_TYPE_PERSONAL, visibility=pb.VISIBILITY_SHARED),
    ]))


async def _seen(stub: svc_grpc.MemoryServiceAsyncStub, scope: pb.Scope, shared: bool) -> dict[str, list[pb.Memory]]:
    searched = await stub.SearchMemories(svc.SearchMemoriesRequest(
        scope=scope, query="이름 비밀 고양이", limit=50, include_shared=shared))
    listed = await stub.ListMemories(svc.ListMemoriesRequest(scope=scope, include_shared=shared))
    return {"search": [r.memory for r in searched.results], "list": list(listed.memories)}


async def test_shared_memory_crosses_only_when_asked_and_is_marked(
    stub: svc_grpc.MemoryServiceAsyncStub, player: str
) -> None:
    """Letia sees Roco's shared fact (shared_from roco) with include_shared, never Roco's private one."""
    await _store(stub, player, "roco")
    letia = pb.Scope(user_id=player, heroine_id="letia")
    for path, memories in (await _seen(stub, letia, shared=False)).items():
        assert memories == [], path
    for path, memories in (await _seen(stub, letia, shared=True)).items():
        assert [(m.content, m.shared_from, m.visibility) for m in memories] == [
            (SHARED, "roco", pb.VISIBILITY_SHARED)], path


async def test_own_memories_are_not_marked_shared(stub: svc_grpc.MemoryServiceAsyncStub, player: str) -> None:
    """Roco's own rows, shared or not, come back without shared_from."""
    await _store(stub, player, "roco")
    roco = pb.Scope(user_id=player, heroine_id="roco")
    for path, memories in (await _seen(stub, roco, shared=True)).items():
        assert sorted(m.content for m in memories) == sorted([PRIVATE, SHARED]), path
        assert all(m.shared_from == "" for m in memories), path


async def test_shared_memories_never_cross_players(stub: svc_grpc.MemoryServiceAsyncStub, player: str) -> None:
    """Another player's shared memories stay out of this player's reads, include_shared or not."""
    await _store(stub, f"other-{player}", "roco")
    for path, memories in (await _seen(stub, pb.Scope(user_id=player, heroine_id="letia"), shared=True)).items():
        assert memories == [], path
