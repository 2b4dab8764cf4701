"""The Python client tells its caller how many memories a search's clock hid (``SearchHits.hidden_by_clock``)."""

from __future__ import annotations

import asyncio

from npc_memory.domain.model import Scope
from npc_memory_client import AsyncClient, Client, Fact, SearchHits

WALL_CLOCK_FACTS = ["비 오는 날을 좋아한다", "고양이를 키운다", "매운 음식을 못 먹는다", "생일은 3월 5일이다",
                    "축구를 좋아한다", "여동생이 서울에 산다", "아침마다 빵을 굽는다", "검술을 배운다",
                    "바다를 좋아한다"]


async def test_a_game_clock_search_says_how_many_memories_it_hid(server_port: int, scope: Scope) -> None:
    """9 facts dated by the wall clock and 1 on game day 3: a day-15 search answers 1 and says 9 were hidden."""
    u, h = scope.user_id, scope.heroine_id
    async with AsyncClient(f"127.0.0.1:{server_port}", timeout=60) as client:
        await client.store(u, h, [*WALL_CLOCK_FACTS, Fact("레티아와 처음 만났다", valid_game_day=3)])
        at_day_15 = await client.search(u, h, "좋아하는 것", limit=20, now_game_day=15)
        wall = await client.search(u, h, "좋아하는 것", limit=20)
    assert isinstance(at_day_15, SearchHits)
    assert [hit.memory.content for hit in at_day_15] == ["레티아와 처음 만났다"]
    assert at_day_15.hidden_by_clock == 9
    assert len(wall) == 10
    assert wall.hidden_by_clock == 0

    def blocking() -> tuple[int, int]:
        with Client(f"127.0.0.1:{server_port}", timeout=60) as c:
            hits = c.search(u, h, "좋아하는 것", limit=20, as_of_game_day=15)
            return len(hits), hits.hidden_by_clock

    assert await asyncio.to_thread(blocking) == (1, 9)
