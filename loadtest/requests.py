"""Request builders for the scoring path: realistic searches (weights, filters, as_of) and stores over a scope."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import numpy as np
from google.protobuf.timestamp_pb2 import Timestamp
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc

from loadtest import korean
from loadtest.pool import Pool

SPEAKERS = {"user": pb.SPEAKER_USER, "heroine": pb.SPEAKER_HEROINE}
SUBJECTS = {"user": pb.SUBJECT_USER, "heroine": pb.SUBJECT_HEROINE, "world": pb.SUBJECT_WORLD}
CONTENT_TYPES = {
    "fact": pb.CONTENT_TYPE_FACT, "preference": pb.CONTENT_TYPE_PREFERENCE, "trait": pb.CONTENT_TYPE_TRAIT,
    "event": pb.CONTENT_TYPE_EVENT, "opinion": pb.CONTENT_TYPE_OPINION, "personal": pb.CONTENT_TYPE_PERSONAL,
    "relationship": pb.CONTENT_TYPE_RELATIONSHIP,
}
# A stored fact's vector: its template's real vector, nudged so it is not a near-duplicate of that template.
STORE_NOISE = 0.35


def _ts(when: datetime) -> Timestamp:
    out = Timestamp()
    out.FromDatetime(when)
    return out


@dataclass
class Requests:
    """Builds requests for one simulated player; ``pool`` set means caller-supplied vectors."""

    rng: random.Random
    pool: Pool | None
    passage_rows: dict[str, int] = field(default_factory=dict)
    query_rows: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.pool is not None:
            self.passage_rows = self.pool.passage_index()
            self.query_rows = {q: i for i, q in enumerate(self.pool.queries)}

    def _query(self, heroine: str) -> tuple[str, list[float]]:
        if self.pool is None:
            return self.rng.choice(korean.queries(heroine)), []
        text = self.rng.choice([q for q in korean.queries(heroine) if q in self.query_rows] or self.pool.queries)
        return text, self.pool.query_vectors[self.query_rows[text]].tolist()

    def search(self, scope: pb.Scope, kind: str = "plain") -> svc.SearchMemoriesRequest:
        """A search of ``kind``: plain, weights, filter, as_of, game_clock or rrf."""
        text, vector = self._query(scope.heroine_id)
        req = svc.SearchMemoriesRequest(scope=scope, query=text, query_embedding=vector,
                                        limit=self.rng.choice((5, 10, 10, 20)))
        rng = self.rng
        if kind == "weights":
            raw = [rng.random() + 0.05 for _ in range(4)]
            total = sum(raw)
            req.weights.CopyFrom(pb.Weights(recency=raw[0] / total, importance=raw[1] / total,
                                            relevance=raw[2] / total, keyword=raw[3] / total))
        elif kind == "filter":
            choice = rng.randrange(4)
            if choice == 0:
                req.filter.subjects.append(pb.SUBJECT_USER)
            elif choice == 1:
                req.filter.speakers.append(pb.SPEAKER_HEROINE)
                req.filter.min_importance = 5
            elif choice == 2:
                req.filter.content_types.extend([pb.CONTENT_TYPE_PREFERENCE, pb.CONTENT_TYPE_EVENT])
            else:
                req.filter.tiers.append(pb.TIER_KNOWLEDGE)
                req.filter.min_importance = rng.randint(3, 7)
        elif kind == "as_of":
            req.as_of.CopyFrom(_ts(datetime.now(UTC) - timedelta(days=rng.uniform(1, korean.GAME_DAYS))))
        elif kind == "game_clock":
            req.now.CopyFrom(_ts(datetime.now(UTC) + timedelta(days=rng.uniform(0, 7))))
        elif kind == "rrf":
            req.fusion = pb.FUSION_METHOD_RRF
        return req

    def _input(self, fact: korean.Fact, text: str, heroine: str) -> pb.MemoryInput:
        item = pb.MemoryInput(
            speaker=SPEAKERS[fact.speaker], subject=SUBJECTS[fact.subject],
            content_type=CONTENT_TYPES[fact.content_type], content=text, importance=fact.importance,
            slot=fact.slot if fact.subject == "user" and fact.slot else "",
        )
        if fact.subject == "heroine":
            item.subject_id = heroine
        if self.pool is not None:
            base = self.pool.passage_vectors[self.passage_rows[fact.content]]
            noise = np.random.default_rng(self.rng.getrandbits(32)).normal(0, STORE_NOISE / np.sqrt(base.shape[0]),
                                                                          base.shape[0])
            noisy = base + noise.astype(np.float32)
            item.embedding.extend((noisy / np.linalg.norm(noisy)).tolist())
        return item

    def store(self, scope: pb.Scope, count: int, day: int, repeat: bool = False) -> svc.StoreMemoriesRequest:
        """``count`` new facts of game ``day`` (``repeat``: an exact repeat of a known fact, the duplicate path)."""
        heroine = scope.heroine_id
        facts = [f for f in korean.facts(heroine) if self.pool is None or f.content in self.passage_rows]
        items = []
        for _ in range(count):
            fact = self.rng.choice(facts)
            text = fact.content if repeat else f"{day}일차: {fact.content}"
            items.append(self._input(fact, text, heroine))
        return svc.StoreMemoriesRequest(scope=scope, memories=items)

