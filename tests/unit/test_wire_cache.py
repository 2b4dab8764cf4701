"""A search hit's wire form is the same whether built or merged from the bytes of an earlier answer."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime

from npc_memory.api import convert
from npc_memory.api.wire_cache import WireCache
from npc_memory.domain.model import (
    ContentType,
    Memory,
    Scope,
    ScoredMemory,
    Scores,
    Speaker,
    Subject,
    Tier,
)
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc

LETIA = Scope("player-wire", "letia")
AT = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def memory(content: str = "레티아랑 바닷가에서 조개를 주웠음", scope: Scope = LETIA) -> Memory:
    return Memory(uuid.uuid4(), scope, Speaker.USER, Subject.USER, "user", ContentType.EVENT, content, 7,
                  Tier.KNOWLEDGE, "beach", {"source": "test", "n": 2}, AT, AT.replace(day=3), AT, AT, uuid.uuid4(),
                  None, "multilingual-e5-small", timeline_id=3)


def built(m: Memory, asked: Scope | None = None) -> pb.Memory:
    out = pb.Memory()
    convert.fill_memory(out, m, asked)
    return out


def counting(calls: list[str]) -> Callable[[pb.Memory, Memory], None]:
    """fill_memory, noting each content it builds."""
    def build(out: pb.Memory, m: Memory) -> None:
        calls.append(m.content)
        convert.fill_memory(out, m)
    return build


def test_a_hit_answered_again_is_the_message_built_for_it() -> None:
    m = memory()
    scored = ScoredMemory(m, Scores(0.1, 0.7, 0.9, 0.2, 0.65), cosine=0.81)
    answers = []
    for _ in range(3):  # first sight, second (serialized then), third (merged from the bytes)
        response = svc.SearchMemoriesResponse()
        convert.fill_scored(response.results.add(), scored, LETIA)
        answers.append(response.results[0])
    assert answers[0].memory == built(m)
    assert answers[0] == answers[1] == answers[2]
    assert answers[2].cosine == scored.cosine
    assert answers[2].scores.final == 0.65


def test_a_shared_hit_is_marked_even_from_the_bytes() -> None:
    other = memory(scope=Scope("player-wire", "roco"))
    for _ in range(3):
        response = svc.SearchMemoriesResponse()
        convert.fill_scored(response.results.add(), ScoredMemory(other, Scores(0, 0, 1, 0, 1)), LETIA)
        assert response.results[0].memory == built(other, LETIA)
        assert response.results[0].memory.shared_from == "roco"
    own = svc.SearchMemoriesResponse()
    convert.fill_scored(own.results.add(), ScoredMemory(other, Scores(0, 0, 1, 0, 1)), other.scope)
    assert not own.results[0].memory.shared_from


def test_an_equal_but_distinct_object_is_built_afresh() -> None:
    cache = WireCache(size=2)
    calls: list[str] = []
    build = counting(calls)

    first = memory("바뀌기 전")
    changed = replace(first, content="바뀐 뒤")  # a row changed in place: a new object, the same id
    for m in (first, first, first, changed):
        out = pb.Memory()
        cache.fill(out, m, build)
        assert out == built(m)
    assert calls == ["바뀌기 전", "바뀌기 전", "바뀐 뒤"]


def test_the_least_recent_object_is_dropped_past_the_size() -> None:
    cache = WireCache(size=2)
    calls: list[str] = []
    build = counting(calls)

    a, b, c = memory("a"), memory("b"), memory("c")
    for m in (a, a, a, b, c, a):  # a serialized at its second sight, merged at its third; dropped when c came
        cache.fill(pb.Memory(), m, build)
    assert calls == ["a", "a", "b", "c", "a"]
