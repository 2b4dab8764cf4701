"""Every content length the API accepts is stored: no index row limit turns valid input into an error."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from google.protobuf import field_mask_pb2
from npc_memory.domain.model import Scope
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc

if TYPE_CHECKING:
    from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc

    Stub = svc_grpc.MemoryServiceAsyncStub

MAX_CHARS = 2000


def _hangul(rng: random.Random, n: int) -> str:
    return "".join(chr(rng.randrange(0xAC00, 0xD7A4)) for _ in range(n))


def _mixed(rng: random.Random, n: int) -> str:
    """Hangul, Latin, CJK, Cyrillic, emoji (4 UTF-8 bytes each) and compatibility forms NFKC expands."""
    ranges = [(0xAC00, 0xD7A4), (0x41, 0x7B), (0x4E00, 0x9FFF), (0x0400, 0x0500), (0x1F300, 0x1F6FF),
              (0xFDFA, 0xFDFC), (0x3300, 0x3358)]
    out = []
    for _ in range(n):
        lo, hi = rng.choice(ranges)
        out.append(chr(rng.randrange(lo, hi)))
    return "".join(out)


def _scope(scope: Scope) -> pb.Scope:
    return pb.Scope(user_id=scope.user_id, heroine_id=scope.heroine_id)


async def test_longest_content_in_any_script_is_stored(stub: Stub, scope: Scope) -> None:
    """2,000 random Hangul characters and 2,000 random mixed-script/emoji characters both store and read back."""
    rng = random.Random(7)
    texts = [_hangul(rng, MAX_CHARS), _mixed(rng, MAX_CHARS)]
    stored = await stub.StoreMemories(svc.StoreMemoriesRequest(scope=_scope(scope), memories=[
        pb.MemoryInput(speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, content=t) for t in texts
    ]))
    assert [r.outcome for r in stored.results] == [pb.STORE_OUTCOME_CREATED] * 2
    for result, text in zip(stored.results, texts, strict=True):
        got = await stub.GetMemory(svc.GetMemoryRequest(scope=_scope(scope), memory_id=result.memory_id))
        assert got.memory.content == text
    again = await stub.StoreMemories(svc.StoreMemoriesRequest(scope=_scope(scope), memories=[
        pb.MemoryInput(speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, content=texts[0])
    ]))
    assert again.results[0].outcome == pb.STORE_OUTCOME_DUPLICATE
    assert again.results[0].memory_id == stored.results[0].memory_id


async def test_longest_content_as_an_update_is_stored(stub: Stub, scope: Scope) -> None:
    """UpdateMemory to 2,000 random Hangul characters versions the fact."""
    stored = await stub.StoreMemories(svc.StoreMemoriesRequest(scope=_scope(scope), memories=[
        pb.MemoryInput(speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, content="짧은 사실")
    ]))
    text = _hangul(random.Random(11), MAX_CHARS)
    updated = await stub.UpdateMemory(svc.UpdateMemoryRequest(
        scope=_scope(scope), memory_id=stored.results[0].memory_id, content=text,
        update_mask=field_mask_pb2.FieldMask(paths=["content"]),
    ))
    assert updated.memory.content == text
