"""BuildContext over gRPC: the heroine's prompt block from memories extracted through a scripted endpoint.

The chat endpoint (tests/chat_endpoint.py) is a real HTTP server answering from a script: no language model
runs here.
"""

from __future__ import annotations

from datetime import UTC, datetime

import grpc
import pytest
from chat_endpoint import ChatEndpoint, facts_answer
from google.protobuf import timestamp_pb2
from npc_memory.domain.context import estimate_tokens
from npc_memory.domain.model import Scope
from npc_memory_client.v1 import context_pb2 as ctx
from npc_memory_client.v1 import extraction_pb2 as ex
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc
from test_extraction import DOG_FACT, SEED_FACTS, SEED_TURNS

ROCO_PRIVATE = "로코에게만 털어놓은 비밀: 밤이 무서움"
ROCO_SHARED = "플레이어의 이름은 민준임"


def _ts(day: int) -> timestamp_pb2.Timestamp:
    ts = timestamp_pb2.Timestamp()
    ts.FromDatetime(datetime(2026, 3, day, 12, tzinfo=UTC))
    return ts


async def _extract(stub: svc_grpc.MemoryServiceAsyncStub, chat: ChatEndpoint, scope: Scope, dialogue_id: str,
                   turns: list[tuple[pb.Speaker.ValueType, str]], day: int, *facts: dict[str, object]) -> None:
    chat.play(facts_answer(*facts))
    job = (await stub.ExtractMemories(ex.ExtractMemoriesRequest(
        scope=pb.Scope(user_id=scope.user_id, heroine_id=scope.heroine_id), mode=ex.EXTRACTION_MODE_SYNC,
        dialogue=ex.Dialogue(dialogue_id=dialogue_id, turns=[
            ex.DialogueTurn(speaker=s, text=t, game_time=_ts(day)) for s, t in turns]),
    ))).job
    assert job.state == ex.EXTRACTION_JOB_STATE_DONE


@pytest.fixture
async def letia(ex_stub: svc_grpc.MemoryServiceAsyncStub, chat: ChatEndpoint, scope: Scope) -> pb.Scope:
    """A player who told Letia about cats on day 1 and dogs on day 30, and Roco a secret and (shared) a name."""
    await _extract(ex_stub, chat, scope, "day1", list(SEED_TURNS), 1, *SEED_FACTS)
    await _extract(ex_stub, chat, scope, "day30", [(pb.SPEAKER_USER, "요즘은 강아지가 더 좋아")], 30, DOG_FACT)
    await ex_stub.StoreMemories(svc.StoreMemoriesRequest(
        scope=pb.Scope(user_id=scope.user_id, heroine_id="roco"), memories=[
            pb.MemoryInput(speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, content=ROCO_PRIVATE, importance=9,
                           valid_at=_ts(2)),
            pb.MemoryInput(speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, content=ROCO_SHARED, importance=5,
                           content_type=pb.CONTENT_TYPE_PERSONAL, visibility=pb.VISIBILITY_SHARED,
                           valid_at=_ts(2)),
        ]))
    return pb.Scope(user_id=scope.user_id, heroine_id=scope.heroine_id)


def _request(scope: pb.Scope, budget: int = 200, shared: bool = True, language: str = "") -> ctx.BuildContextRequest:
    return ctx.BuildContextRequest(scope=scope, utterance="요즘 무슨 동물 좋아해?", token_budget=budget,
                                   include_shared=shared, language=language, now=_ts(31))


async def test_block_lists_the_dog_first_and_only_shared_memories_of_roco(
    ex_stub: svc_grpc.MemoryServiceAsyncStub, letia: pb.Scope
) -> None:
    """Within 200 tokens: the dog preference leads, the cat is gone, Roco's shared fact is marked, her secret absent."""
    block = await ex_stub.BuildContext(_request(letia))
    assert block.tokens <= 200
    assert block.sections[0].kind == ctx.CONTEXT_SECTION_KIND_ABOUT_PLAYER
    assert block.sections[0].items[0].memory.content == "강아지를 좋아함"
    items = [i for s in block.sections for i in s.items]
    assert ROCO_PRIVATE not in block.text
    assert all(i.memory.content != ROCO_PRIVATE for i in items)
    assert not any(i.memory.content == "고양이를 좋아함" and i.memory.subject == pb.SUBJECT_USER for i in items)
    (shared,) = [i for i in items if i.memory.shared_from]
    assert shared.memory.content == ROCO_SHARED
    assert shared.memory.shared_from == "roco"
    assert "공유된 기억: roco" in shared.text
    assert shared.text in block.text
    assert block.text.index("강아지를 좋아함") < block.text.index(ROCO_SHARED)
    assert {s.kind for s in block.sections} >= {ctx.CONTEXT_SECTION_KIND_ABOUT_HEROINE,
                                                ctx.CONTEXT_SECTION_KIND_OPINIONS}
    assert sum(s.tokens for s in block.sections) == block.tokens


async def test_without_include_shared_nothing_of_roco_appears(
    ex_stub: svc_grpc.MemoryServiceAsyncStub, letia: pb.Scope
) -> None:
    """include_shared off: no memory of another heroine in any section."""
    block = await ex_stub.BuildContext(_request(letia, shared=False))
    assert all(i.memory.scope.heroine_id == "letia" and not i.memory.shared_from
               for s in block.sections for i in s.items)
    assert ROCO_SHARED not in block.text


async def test_small_budget_keeps_the_most_important_and_reports_the_rest(
    ex_stub: svc_grpc.MemoryServiceAsyncStub, letia: pb.Scope
) -> None:
    """A budget too small for everything stays within it and names every memory it left out."""
    full = await ex_stub.BuildContext(_request(letia, budget=2000))
    small = await ex_stub.BuildContext(_request(letia, budget=30))
    assert not full.left_out
    assert small.tokens <= 30
    kept = {i.memory.memory_id for s in small.sections for i in s.items}
    left = {x.memory_id for x in small.left_out}
    assert left
    assert kept | left == {i.memory.memory_id for s in full.sections for i in s.items}
    assert "강아지를 좋아함" in small.text


async def test_same_inputs_give_the_same_block(ex_stub: svc_grpc.MemoryServiceAsyncStub, letia: pb.Scope) -> None:
    """Two calls with the same request and time return byte-identical answers."""
    first = await ex_stub.BuildContext(_request(letia))
    second = await ex_stub.BuildContext(_request(letia))
    assert first.SerializeToString(deterministic=True) == second.SerializeToString(deterministic=True)


async def test_english_templates(ex_stub: svc_grpc.MemoryServiceAsyncStub, letia: pb.Scope) -> None:
    """language=en renders English titles and the English shared mark."""
    block = await ex_stub.BuildContext(_request(letia, language="en"))
    assert block.sections[0].title == "What letia knows about the player"
    assert "shared memory: heard by roco" in block.text


async def test_bad_language_and_budget_name_their_fields(
    ex_stub: svc_grpc.MemoryServiceAsyncStub, scope: Scope
) -> None:
    """An unknown language and a negative budget are INVALID_ARGUMENT."""
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await ex_stub.BuildContext(_request(pb.Scope(user_id=scope.user_id, heroine_id="letia"), budget=-1,
                                            language="fr"))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "token_budget" in (caught.value.details() or "")


def test_token_estimate_counts_hangul_per_syllable() -> None:
    """Each Hangul syllable is one token, four Latin characters one, plus one per line."""
    assert estimate_tokens("고양이를 좋아함") == 7 + 1
    assert estimate_tokens("likes dogs") == 3 + 1
