"""The Python client's extraction, job and context calls, sync and async, against the live server.

The chat model is the scripted endpoint of tests/chat_endpoint.py (a real HTTP server answering from a
script; no language model runs here).
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from chat_endpoint import ChatEndpoint, facts_answer
from npc_memory.domain.model import Scope
from npc_memory_client import AsyncClient, Client, Fact, Turn
from npc_memory_client.model import Speaker, Visibility
from test_extraction import SEED_FACTS

NOW = datetime(2026, 3, 2, tzinfo=UTC)


async def test_async_client_extracts_reads_the_job_and_builds_a_block(
    ex_port: int, chat: ChatEndpoint, scope: Scope
) -> None:
    """extract(wait=True) stores the facts; extraction_job reads the same job; build_context renders them."""
    chat.play(facts_answer(*SEED_FACTS))
    turns = [Turn("나는 고양이 좋아해", game_time=datetime(2026, 3, 1, tzinfo=UTC)),
             Turn("오빠는 따뜻한 사람이에요", speaker=Speaker.HEROINE)]
    async with AsyncClient(f"127.0.0.1:{ex_port}", timeout=30) as client:
        job = await client.extract(scope.user_id, scope.heroine_id, "c1", turns, wait=True)
        assert job.state == "done"
        assert len(job.memories) == 4
        again = await client.extraction_job(scope.user_id, job.job_id)
        assert again == job
        block = await client.build_context(scope.user_id, scope.heroine_id, "고양이", token_budget=200, now=NOW)
    assert block.sections[0].kind == "about_player"
    assert "고양이를 좋아함" in block.text
    assert block.tokens <= 200


async def test_sync_client_shares_and_builds_the_same_block(ex_port: int, scope: Scope) -> None:
    """The blocking client stores a shared fact with Roco that Letia's block and search show, heard by roco."""
    def run() -> tuple[str, list[str]]:
        with Client(f"127.0.0.1:{ex_port}", timeout=30) as client:
            client.store(scope.user_id, "roco", [Fact("플레이어의 이름은 민준임", shared=True, valid_at=NOW)])
            block = client.build_context(scope.user_id, scope.heroine_id, include_shared=True, now=NOW)
            hits = client.search(scope.user_id, scope.heroine_id, "이름", include_shared=True)
        return block.text, [h.memory.scope.heroine_id for h in hits if h.memory.visibility is Visibility.SHARED]

    text, shared_from = await asyncio.to_thread(run)
    assert "플레이어의 이름은 민준임" in text
    assert shared_from == ["roco"]
