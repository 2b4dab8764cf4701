"""A search tells its caller how many memories its clock hides (game days against wall-clock dates)."""

from __future__ import annotations

from npc_memory.domain.model import Scope
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc

FACTS = ["비 오는 날을 좋아한다", "고양이를 키운다", "매운 음식을 못 먹는다", "생일은 3월 5일이다", "축구를 좋아한다",
         "여동생이 서울에 산다", "아침마다 빵을 굽는다", "검술을 배운다", "바다를 좋아한다"]


def _fact(content: str, day: float | None = None) -> pb.MemoryInput:
    fact = pb.MemoryInput(speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, content_type=pb.CONTENT_TYPE_FACT,
                          content=content)
    if day is not None:
        fact.valid_game_day.day = day
    return fact


async def test_a_game_clock_search_counts_the_wall_clock_dated_memories_it_hides(
    stub: svc_grpc.MemoryServiceAsyncStub, scope: Scope,
) -> None:
    """9 facts without a game day and 1 on day 3; a search at game day 15 answers 1 and says 9 are hidden."""
    wire = pb.Scope(user_id=scope.user_id, heroine_id=scope.heroine_id)
    await stub.StoreMemories(svc.StoreMemoriesRequest(scope=wire, memories=[
        *(_fact(c) for c in FACTS), _fact("레티아와 처음 만났다", day=3)]))
    game = svc.SearchMemoriesRequest(scope=wire, query="좋아하는 것", limit=20)
    game.now_game_day.day = 15
    at_day_15 = await stub.SearchMemories(game)
    assert [r.memory.content for r in at_day_15.results] == ["레티아와 처음 만났다"]
    assert at_day_15.hidden_by_clock == 9
    wall = await stub.SearchMemories(svc.SearchMemoriesRequest(scope=wire, query="좋아하는 것", limit=20))
    assert len(wall.results) == 10
    assert wall.hidden_by_clock == 0
