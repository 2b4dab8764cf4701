"""Extraction as a use case: queue a dialogue, run a job's attempt (model, checks, one write), work the queue."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from uuid import UUID

from npc_memory.config.extraction import ExtractionSettings
from npc_memory.domain.errors import RequestIdReusedError
from npc_memory.domain.extracted import ModelOutputError, check_answer
from npc_memory.domain.jobs import (
    ExtractedMemory,
    Job,
    JobResult,
    JobState,
    Turn,
    decode_turns,
    encode_turns,
    retry_delay,
)
from npc_memory.domain.model import NewMemory, Scope, StoreResult
from npc_memory.engine import MemoryEngine
from npc_memory.errors import NpcMemoryError
from npc_memory.extraction.client import ChatClient
from npc_memory.extraction.prompt import build_prompt, load_template
from npc_memory.store import jobs
from npc_memory.store.pipelined import Pipeline

log = logging.getLogger(__name__)

SYNC_POLL_SECONDS = 0.05


@dataclass
class Extractor:
    """Turns dialogues into memories through the chat model, one durable job per dialogue."""

    engine: MemoryEngine
    settings: ExtractionSettings
    client: ChatClient
    template: str

    @classmethod
    def create(cls, engine: MemoryEngine, settings: ExtractionSettings) -> Extractor:
        """An extractor with the configured prompt template loaded (ConfigError if unreadable)."""
        return cls(engine, settings, ChatClient(settings), load_template(settings.prompt_path))

    @property
    def lease(self) -> timedelta:
        """How long one attempt holds its job."""
        return timedelta(seconds=self.settings.lease_seconds)

    async def submit(self, scope: Scope, dialogue_id: str, turns: Sequence[Turn]) -> Job:
        """Queue the dialogue (or find its job if it was queued before)."""
        return await jobs.enqueue(self.engine.db, scope, dialogue_id, encode_turns(turns))

    async def run_now(self, job: Job) -> Job:
        """The job after one attempt in the caller's time (synchronous mode).

        If a worker holds the job (it took it first), wait for that attempt to end instead, at most a lease.
        """
        db, user_id = self.engine.db, job.scope.user_id
        if job.state not in (JobState.PENDING, JobState.RUNNING):
            return job
        taken = await jobs.take(db, user_id, job.id, self.lease)
        if taken is not None:
            await self.attempt(taken)
            return await jobs.get(db, user_id, job.id)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settings.lease_seconds
        while True:
            current = await jobs.get(db, user_id, job.id)
            ended = current.state is JobState.PENDING and current.attempts > job.attempts
            if current.state in (JobState.DONE, JobState.FAILED) or ended or loop.time() >= deadline:
                return current
            await asyncio.sleep(SYNC_POLL_SECONDS)

    async def attempt(self, job: Job) -> None:
        """One attempt of a taken job: model, checks, then the good facts and the job's end in one transaction.

        On failure the job is due again after a backoff, or failed after the last attempt.
        """
        turns = decode_turns(job.dialogue)
        try:
            prompt = build_prompt(self.template, job.scope, turns, self.settings.heroines)
            answer = await self.client.complete(prompt)
            checked = check_answer(answer, self.settings.heroines, self.engine.write_settings.max_content_chars)
            await self._store(job, checked.accepted, JobResult(rejected=checked.rejected), turns)
        except (NpcMemoryError, ModelOutputError) as exc:
            if isinstance(exc, RequestIdReusedError):  # a later attempt of this job already wrote it
                return
            last = job.attempts >= self.settings.max_attempts
            delay = None if last else retry_delay(job.attempts, self.settings.backoff_seconds,
                                                   self.settings.backoff_max_seconds)
            log.warning("extraction job %s attempt %d failed%s: %s", job.id, job.attempts,
                        " for good" if last else "", exc)
            await jobs.fail_attempt(self.engine.db, job, str(exc), delay)

    async def _store(self, job: Job, accepted: Sequence[tuple[int, NewMemory]], partial: JobResult,
                     turns: Sequence[Turn]) -> None:
        if not accepted:
            await jobs.complete_alone(self.engine.db, job.id, job.scope, partial)
            return
        # The dialogue's last game time dates the facts, so a later dialogue supersedes an earlier one's slot.
        game_times = [t.game_time for t in turns if t.game_time is not None]
        when = max(game_times) if game_times else None
        # A dialogue stored turn by turn (StoreDialogue): each fact derives from the turns it was extracted from.
        sources = tuple(dict.fromkeys(t.memory_id for t in turns if t.memory_id is not None))
        facts = [replace(fact, valid_at=when or fact.valid_at, parents=fact.parents + sources)
                 for _, fact in accepted]

        def finish(pipe: Pipeline, results: list[StoreResult]) -> None:
            memories = tuple(ExtractedMemory(i, f.content, r)
                             for (i, f), r in zip(accepted, results, strict=True))
            jobs.queue_complete(pipe, job.id, job.scope, JobResult(memories, partial.rejected))

        # The job id is also the idempotency key: a second attempt that races the first writes nothing.
        await self.engine.store(job.scope, facts, request_id=f"extraction:{job.id}", on_commit=finish)

    async def work(self) -> bool:
        """Run one due job, if any; True when there was one."""
        job = await jobs.take_due(self.engine.db, self.lease)
        if job is None:
            return False
        await self.attempt(job)
        return True

    async def work_forever(self) -> None:
        """Work the queue; sleep ``poll_seconds`` when it is empty or the database is unreachable."""
        while True:
            try:
                busy = await self.work()
            except NpcMemoryError as exc:
                log.warning("extraction worker: %s", exc)
                busy = False
            if not busy:
                await asyncio.sleep(self.settings.poll_seconds)

    async def get(self, user_id: str, job_id: UUID) -> Job:
        """One job of the player."""
        return await jobs.get(self.engine.db, user_id, job_id)

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self.client.aclose()
