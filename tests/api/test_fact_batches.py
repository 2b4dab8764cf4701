"""StoreMemories stores facts and never reads a request as a dialogue (issue: "Dialogue is stated, never guessed").

A game that learns twenty facts in a day stores them in one batch, the speaker alternating between the player and
the heroine: the batch once read as a dialogue and its facts were embedded with their neighbours. Stored in one
batch or one by one (another scope), each fact now gets the same vector and every search the same answer.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import TypeAlias

import numpy as np
from npc_memory.domain.model import Scope, Vector
from npc_memory.engine import MemoryEngine
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc

Stub: TypeAlias = "svc_grpc.MemoryServiceAsyncStub"
DAY = datetime(2026, 4, 2, 21, 0, tzinfo=UTC)
FACTS = [  # short, the speaker changing between every two: what the old batch rule read as a conversation
    ("user", "고양이를 좋아함"), ("heroine", "비 오는 날을 좋아함"), ("user", "간호사로 일함"),
    ("heroine", "피아노를 칠 줄 앎"), ("user", "경주에 다녀옴"), ("heroine", "매운 음식을 못 먹음"),
    ("user", "커피 대신 녹차를 마심"), ("heroine", "바다를 무서워함"), ("user", "동생이 한 명 있음"),
    ("heroine", "별자리에 관심이 많음"), ("user", "주말마다 등산을 감"), ("heroine", "꽃집에서 일하고 싶어함"),
]
QUERIES = ["무슨 일 해?", "좋아하는 동물", "여행 간 곳", "무서워하는 것", "마시는 차", "가족 관계"]
SPEAKERS = {"user": pb.SPEAKER_USER, "heroine": pb.SPEAKER_HEROINE}


def _scope(scope: Scope) -> pb.Scope:
    return pb.Scope(user_id=scope.user_id, heroine_id=scope.heroine_id)


def _input(i: int, speaker: str, content: str) -> pb.MemoryInput:
    subject = (pb.SUBJECT_USER, "user") if speaker == "user" else (pb.SUBJECT_HEROINE, "letia")
    fact = pb.MemoryInput(speaker=SPEAKERS[speaker], subject=subject[0], subject_id=subject[1], content=content)
    fact.valid_at.FromDatetime(DAY + timedelta(minutes=i))
    return fact


async def _vectors(engine: MemoryEngine, scope: Scope) -> dict[str, Vector]:
    async with engine.db.connection() as conn:
        cur = await conn.execute("SELECT content, embedding FROM user_memories WHERE user_id = %(u)s",
                                 {"u": scope.user_id})
        return {r["content"]: np.asarray(r["embedding"].to_numpy(), dtype=np.float32) for r in await cur.fetchall()}


async def test_an_alternating_batch_of_short_facts_stores_what_one_by_one_stores(
    stub: Stub, engine: MemoryEngine, scope: Scope
) -> None:
    """The same facts as one alternating batch and one per request: identical vectors, identical search results."""
    apart = Scope(f"apart-{uuid.uuid4().hex[:8]}", scope.heroine_id)
    facts = [_input(i, s, c) for i, (s, c) in enumerate(FACTS)]
    batch = await stub.StoreMemories(svc.StoreMemoriesRequest(scope=_scope(scope), memories=facts))
    assert [r.outcome for r in batch.results] == [pb.STORE_OUTCOME_CREATED] * len(FACTS)
    for fact in facts:
        one = await stub.StoreMemories(svc.StoreMemoriesRequest(scope=_scope(apart), memories=[fact]))
        assert one.results[0].outcome == pb.STORE_OUTCOME_CREATED
    together, alone = await _vectors(engine, scope), await _vectors(engine, apart)
    assert set(together) == set(alone) == {c for _, c in FACTS}
    own = await engine.embedder.embed_passages([c for _, c in FACTS])
    for (_, content), vector in zip(FACTS, own, strict=True):
        assert np.array_equal(together[content], alone[content])
        assert float(np.dot(together[content], vector)) > 0.9999  # each fact embedded alone: no neighbour, no label
    now = DAY + timedelta(days=1)
    for query in QUERIES:
        answers = []
        for where in (scope, apart):
            request = svc.SearchMemoriesRequest(scope=_scope(where), query=query, limit=10)
            request.now.FromDatetime(now)
            hits = (await stub.SearchMemories(request)).results
            answers.append([(h.memory.content, round(h.scores.final, 6)) for h in hits])
        assert answers[0] == answers[1], query
        assert len(answers[0]) == 10
