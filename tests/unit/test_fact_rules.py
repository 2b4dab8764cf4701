"""A fact a chat model proposes meets exactly the rules a StoreMemories request does (one rule set, two users)."""

from __future__ import annotations

from typing import Any

import pytest
from npc_memory.api.requests import parse_store
from npc_memory.config import WriteConfig
from npc_memory.domain.extracted import RejectedFact, check_fact
from npc_memory.errors import InvalidArgumentError
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc

WRITE = WriteConfig()
GOOD: dict[str, Any] = {"speaker": "user", "subject": "heroine", "subject_id": "letia", "content_type": "fact",
                        "content": "레티아는 비 오는 날을 좋아함", "importance": 5, "slot": "weather"}

CASES = [
    {},
    {"importance": 11},
    {"importance": 1},
    {"slot": " weather"},
    {"slot": "날씨\n취향"},
    {"slot": "s" * 129},
    {"content": "a\x00b"},
    {"content": "가" * (WRITE.max_content_chars + 1)},
    {"content": "   "},
    {"subject": "user", "subject_id": "letia"},
    {"subject": "world", "subject_id": "world"},
    {"subject_id": "user"},
    {"subject_id": "Letia"},
]


def _stored(fact: dict[str, Any]) -> bool:
    """Whether StoreMemories accepts the fact."""
    memory = pb.MemoryInput(
        speaker=pb.Speaker.Value(f"SPEAKER_{fact['speaker'].upper()}"),
        subject=pb.Subject.Value(f"SUBJECT_{fact['subject'].upper()}"), subject_id=fact["subject_id"],
        content_type=pb.ContentType.Value(f"CONTENT_TYPE_{fact['content_type'].upper()}"),
        content=fact["content"], importance=fact["importance"],
        slot=fact["slot"],
    )
    request = svc.StoreMemoriesRequest(scope=pb.Scope(user_id="p", heroine_id="letia"), memories=[memory])
    try:
        parse_store(request, WRITE, dim=3)
    except InvalidArgumentError:
        return False
    return True


@pytest.mark.parametrize("change", CASES, ids=[str(c)[:40] for c in CASES])
def test_an_extracted_fact_is_held_to_the_store_rules(change: dict[str, Any]) -> None:
    """check_fact rejects a fact exactly when StoreMemories would refuse it (for a heroine the game knows)."""
    fact = GOOD | change
    extracted = check_fact(0, fact, heroines={"letia", "Letia", "user"}, max_content_chars=WRITE.max_content_chars)
    assert (not isinstance(extracted, RejectedFact)) == _stored(fact)
