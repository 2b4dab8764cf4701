"""Extraction jobs as values: their states, the dialogue they keep, what a finished job wrote and rejected, retries."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any
from uuid import UUID

from npc_memory.domain.extracted import RejectedFact
from npc_memory.domain.model import Scope, Speaker, StoreOutcome, StoreResult


class JobState(StrEnum):
    """Where a job is: waiting (or waiting to retry), taken by a worker, finished, given up."""

    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


@dataclass(frozen=True)
class ExtractedMemory:
    """One stored fact of a job: its index in the model's answer, its text and what storing it did."""

    index: int
    content: str
    result: StoreResult


@dataclass(frozen=True)
class JobResult:
    """What a finished job stored and what it rejected."""

    memories: tuple[ExtractedMemory, ...] = ()
    rejected: tuple[RejectedFact, ...] = ()

    def encode(self) -> dict[str, Any]:
        """The JSON kept on the job row."""
        return {
            "memories": [
                {"fact_index": m.index, "content": m.content, "memory_id": str(m.result.memory_id),
                 "outcome": m.result.outcome.value, "superseded_ids": [str(i) for i in m.result.superseded_ids]}
                for m in self.memories
            ],
            "rejected": [{"fact_index": r.index, "reasons": list(r.reasons), "raw": r.raw} for r in self.rejected],
        }

    @classmethod
    def decode(cls, data: dict[str, Any]) -> JobResult:
        """The result from the row's JSON."""
        return cls(
            memories=tuple(
                ExtractedMemory(m["fact_index"], m["content"], StoreResult(
                    UUID(m["memory_id"]), StoreOutcome(m["outcome"]), tuple(UUID(i) for i in m["superseded_ids"])))
                for m in data.get("memories", [])
            ),
            rejected=tuple(RejectedFact(r["fact_index"], tuple(r["reasons"]), r["raw"])
                           for r in data.get("rejected", [])),
        )


@dataclass(frozen=True)
class Job:
    """One extraction job as stored."""

    id: UUID
    scope: Scope
    dialogue_id: str
    dialogue: list[dict[str, Any]]
    state: JobState
    attempts: int
    last_error: str
    result: JobResult | None
    created_at: datetime
    updated_at: datetime


def retry_delay(attempts: int, base_seconds: float, max_seconds: float) -> timedelta:
    """The wait after the ``attempts``-th failed attempt: ``base`` doubled per further attempt, capped."""
    return timedelta(seconds=min(max_seconds, base_seconds * 2 ** min(attempts - 1, 30)))


@dataclass(frozen=True)
class Turn:
    """One line of a dialogue: who spoke, what was said, and when in the game's clock (if sent)."""

    speaker: Speaker
    text: str
    game_time: datetime | None = None
    memory_id: UUID | None = None
    """The turn's memory, for a dialogue stored by StoreDialogue: the facts extracted link to it (DERIVED_FROM)."""


def encode_turns(turns: Sequence[Turn]) -> list[dict[str, Any]]:
    """The turns as kept on the job row."""
    return [{"speaker": t.speaker.value, "text": t.text,
             "game_time": t.game_time.isoformat() if t.game_time else None}
            | ({"memory_id": str(t.memory_id)} if t.memory_id is not None else {}) for t in turns]


def decode_turns(data: Sequence[dict[str, Any]]) -> list[Turn]:
    """The turns of a job row."""
    return [Turn(Speaker(d["speaker"]), d["text"],
                 datetime.fromisoformat(d["game_time"]) if d.get("game_time") else None,
                 UUID(d["memory_id"]) if d.get("memory_id") else None) for d in data]
