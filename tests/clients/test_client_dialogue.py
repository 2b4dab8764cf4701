"""The Python client's store_dialogue, blocking and asyncio, against the live server."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from npc_memory.domain.model import Scope
from npc_memory_client import (
    AsyncClient,
    Client,
    FailedPreconditionError,
    InvalidArgumentError,
    StoreOutcome,
    Tier,
    Turn,
    TurnPlace,
)
from npc_memory_client.model import Speaker

SAID = datetime(2026, 7, 1, 19, 30, tzinfo=UTC)
TURNS = [Turn("오늘 뭐 했어?", Speaker.HEROINE, speaker_name="레티아", said_at=SAID),
         Turn("바다 보고 왔어", speaker_name="민수", said_at=SAID)]


async def test_async_client_stores_a_dialogue_and_continues_it(server_port: int, scope: Scope) -> None:
    """Turns come back one result each; a continuation at first_position 2 and a resend are answered in place."""
    async with AsyncClient(f"127.0.0.1:{server_port}", timeout=30) as client:
        stored = await client.store_dialogue(scope.user_id, scope.heroine_id, "beach", TURNS)
        assert [r.outcome for r in stored.turns] == [StoreOutcome.CREATED] * 2
        assert stored.job is None
        more = await client.store_dialogue(scope.user_id, scope.heroine_id, "beach", ["좋았겠다"], first_position=2)
        again = await client.store_dialogue(scope.user_id, scope.heroine_id, "beach", TURNS)
        assert [r.memory_id for r in again.turns] == [r.memory_id for r in stored.turns]
        assert [r.outcome for r in again.turns] == [StoreOutcome.DUPLICATE] * 2
        third = await client.get(scope.user_id, scope.heroine_id, more.turns[0].memory_id)
    assert third.tier is Tier.SOURCE
    assert third.place == TurnPlace("beach", 2, "")
    assert third.content == "좋았겠다"


async def test_sync_client_stores_a_dialogue_and_names_bad_fields(server_port: int, scope: Scope) -> None:
    """The blocking client: a stored turn reads back with its place; a bad turn and extract are refused by name."""
    def run() -> None:
        with Client(f"127.0.0.1:{server_port}", timeout=30) as client:
            stored = client.store_dialogue(scope.user_id, scope.heroine_id, "walk", TURNS)
            first = client.get(scope.user_id, scope.heroine_id, stored.turns[0].memory_id)
            assert first.place == TurnPlace("walk", 0, "레티아")
            assert first.valid_at == SAID
            with pytest.raises(InvalidArgumentError) as bad:
                client.store_dialogue(scope.user_id, scope.heroine_id, "walk", [Turn("")], first_position=-1)
            assert {v.field for v in bad.value.violations} == {"dialogue.turns[0].text", "first_position"}
            with pytest.raises(FailedPreconditionError):  # this server has no extraction configured
                client.store_dialogue(scope.user_id, scope.heroine_id, "walk", TURNS, extract=True)

    await asyncio.to_thread(run)
