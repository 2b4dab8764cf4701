"""The plain branch of the timeline view (store/view.py): a player who never saved reads the table directly.

A read of the live view by a player without a state row takes the plain branch; an explicit timeline (here the
root, ``timeline_id=1``) always takes the view's branches. Both must give the same rows, and a player who saved
must never get the plain branch's answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from google.protobuf import field_mask_pb2
from npc_memory.domain.model import Scope
from npc_memory.engine import MemoryEngine
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc

if TYPE_CHECKING:
    from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc

    Stub = svc_grpc.MemoryServiceAsyncStub

ROOT = 1


def _scope(scope: Scope) -> pb.Scope:
    return pb.Scope(user_id=scope.user_id, heroine_id=scope.heroine_id)


def _fact(content: str, day: float, **kw: Any) -> pb.MemoryInput:
    return pb.MemoryInput(speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, content=content,
                          valid_game_day=pb.GameTime(day=day), **kw)


async def _store(stub: Stub, scope: Scope, *facts: pb.MemoryInput) -> list[str]:
    response = await stub.StoreMemories(svc.StoreMemoriesRequest(scope=_scope(scope), memories=list(facts)))
    return [r.memory_id for r in response.results]


async def _listed(stub: Stub, scope: Scope, timeline_id: int = 0) -> list[bytes]:
    """Every memory of the scope, closed ones too, as serialised messages in id order."""
    got = await stub.ListMemories(svc.ListMemoriesRequest(scope=_scope(scope), include_invalidated=True,
                                                          timeline_id=timeline_id))
    return [m.SerializeToString(deterministic=True) for m in sorted(got.memories, key=lambda m: m.memory_id)]


async def _searched(stub: Stub, scope: Scope, query: str, timeline_id: int = 0) -> list[tuple[str, float]]:
    got = await stub.SearchMemories(svc.SearchMemoriesRequest(scope=_scope(scope), query=query,
                                                              timeline_id=timeline_id))
    return [(r.memory.memory_id, r.scores.final) for r in got.results]


async def _has_state(engine: MemoryEngine, user_id: str) -> bool:
    async with engine.db.connection() as conn:
        cur = await conn.execute("SELECT 1 FROM player_state WHERE user_id = %(u)s", {"u": user_id})
        return await cur.fetchone() is not None


async def test_a_player_who_never_saved_gets_the_views_rows(stub: Stub, engine: MemoryEngine, scope: Scope) -> None:
    """Live reads (plain branch) equal reads of the root timeline through the view: rows, closes, scores."""
    cats, rain, _ = await _store(stub, scope, _fact("나는 고양이를 좋아해", 1, slot="favorite_animal"),
                                 _fact("비 오는 날을 좋아해", 2, importance=3), _fact("바다에 가고 싶어", 3))
    await _store(stub, scope, _fact("요즘은 강아지가 더 좋아", 5, slot="favorite_animal"))  # closes cats in place
    await stub.UpdateMemory(svc.UpdateMemoryRequest(scope=_scope(scope), memory_id=rain, importance=9,
                                                    update_mask=field_mask_pb2.FieldMask(paths=["importance"])))
    assert not await _has_state(engine, scope.user_id)
    live = await _listed(stub, scope)
    assert len(live) == 4
    assert live == await _listed(stub, scope, ROOT)
    closed = await stub.GetMemory(svc.GetMemoryRequest(scope=_scope(scope), memory_id=cats))
    assert closed.memory.close_reason == pb.CLOSE_REASON_SUPERSEDED
    for query in ("좋아해", "바다"):
        found = await _searched(stub, scope, query)
        assert found
        # Scores to 1e-5: the live view's search of a player who never saved is ranked in memory
        # (search/held.py), whose float32 cosines are summed in another order than pgvector's (~1e-7).
        rooted = await _searched(stub, scope, query, ROOT)
        assert [i for i, _ in found] == [i for i, _ in rooted]
        assert [s for _, s in found] == pytest.approx([s for _, s in rooted], abs=1e-5)


async def test_a_player_who_saved_and_loaded_gets_the_views_answer(stub: Stub, engine: MemoryEngine,
                                                                   scope: Scope) -> None:
    """After a save and a load, a close is a change entry: the table row stays open, the live view has it closed.

    The plain branch would read the open row (and the other timeline's row); the view's branches must run.
    """
    cats, sea = await _store(stub, scope, _fact("나는 고양이를 좋아해", 1), _fact("바다에 가고 싶어", 2))
    await stub.CreateSavePoint(svc.CreateSavePointRequest(user_id=scope.user_id, save_id="s"))
    (abandoned,) = await _store(stub, scope, _fact("산에 가고 싶어", 3))
    await stub.LoadSavePoint(svc.LoadSavePointRequest(user_id=scope.user_id, save_id="s"))
    await stub.InvalidateMemory(svc.InvalidateMemoryRequest(scope=_scope(scope), memory_id=cats))
    assert await _has_state(engine, scope.user_id)
    async with engine.db.connection() as conn:
        cur = await conn.execute("SELECT invalid_at FROM user_memories WHERE user_id = %(u)s AND id = %(id)s",
                                 {"u": scope.user_id, "id": cats})
        row = await cur.fetchone()
    assert row is not None
    assert row["invalid_at"] is None  # the close is an entry, not the row's column
    found = {m for m, _ in await _searched(stub, scope, "좋아해 가고 싶어")}
    assert found == {sea}
    assert abandoned not in found
    listed = await stub.ListMemories(svc.ListMemoriesRequest(scope=_scope(scope)))
    assert {m.memory_id for m in listed.memories} == {sea}
