"""Extraction jobs as values: their states, what a finished job wrote and rejected, and the retry schedule."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any
from uuid import UUID

from npc_memory.domain.extracted import RejectedFact
from npc_memory.domain.model import Scope, StoreOutcome, StoreResult


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
