"""The extraction job queue: enqueue once per dialogue, take due jobs with SKIP LOCKED, finish or retry."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from uuid import UUID, uuid4

from psycopg import sql
from psycopg.types.json import Jsonb

from npc_memory.domain.jobs import Job, JobResult, JobState
from npc_memory.domain.model import Scope
from npc_memory.errors import NotFoundError
from npc_memory.store.compiled import compile_statement
from npc_memory.store.pipelined import Pipeline
from npc_memory.store.pool import Database

JOB_COLUMNS = ("job_id", "user_id", "heroine_id", "dialogue_id", "dialogue", "state", "attempts", "last_error",
               "result", "created_at", "updated_at")
_COLUMNS = sql.SQL(", ").join(map(sql.Identifier, JOB_COLUMNS))

# A second request for the same dialogue gets the first job: the insert does nothing and the select finds it.
ENQUEUE = sql.SQL("""
INSERT INTO extraction_jobs (user_id, job_id, heroine_id, dialogue_id, dialogue)
VALUES (%(user_id)s, %(job_id)s, %(heroine_id)s, %(dialogue_id)s, %(dialogue)s)
ON CONFLICT (user_id, heroine_id, dialogue_id) DO NOTHING
RETURNING {columns}
""").format(columns=_COLUMNS)

BY_DIALOGUE = sql.SQL("""
SELECT {columns} FROM extraction_jobs
WHERE user_id = %(user_id)s AND heroine_id = %(heroine_id)s AND dialogue_id = %(dialogue_id)s
""").format(columns=_COLUMNS)

BY_ID = sql.SQL(
    "SELECT {columns} FROM extraction_jobs WHERE user_id = %(user_id)s AND job_id = %(job_id)s"
).format(columns=_COLUMNS)

# Taking a job leases it: it turns 'running' until next_attempt_at, so a worker that dies mid-job (kill -9)
# leaves it due again once the lease has passed. SKIP LOCKED lets several workers (or servers) share the queue.
TAKE_ONE = sql.SQL("""
WITH due AS (
    SELECT user_id, job_id FROM extraction_jobs
    WHERE user_id = %(user_id)s AND job_id = %(job_id)s AND state IN ('pending', 'running')
      AND next_attempt_at <= now()
    FOR UPDATE SKIP LOCKED
)
UPDATE extraction_jobs j
SET state = 'running', attempts = j.attempts + 1, next_attempt_at = now() + %(lease)s, updated_at = now()
FROM due WHERE j.user_id = %(user_id)s AND j.user_id = due.user_id AND j.job_id = due.job_id
RETURNING {columns}
""").format(columns=sql.SQL(", ").join(sql.Identifier("j", c) for c in JOB_COLUMNS))

# The earliest due jobs of every player, read without locking them: on Citus a statement over every shard cannot
# lock rows. Each is then taken by TAKE_ONE, which locks that one row and checks it is still due, so a job another
# worker took meanwhile is skipped for the next.
DUE = """
SELECT user_id, job_id FROM extraction_jobs
WHERE state IN ('pending', 'running') AND next_attempt_at <= now()
ORDER BY next_attempt_at
LIMIT %(candidates)s
"""
DUE_CANDIDATES = 8
"""Due jobs read per look: enough that several workers racing for the first still find one each."""

# Only the attempt that holds the job records its failure: a later attempt may have taken it after the lease.
FAIL_ATTEMPT = """
UPDATE extraction_jobs
SET state = %(state)s, last_error = %(error)s, next_attempt_at = now() + %(delay)s, updated_at = now()
WHERE user_id = %(user_id)s AND job_id = %(job_id)s AND state = 'running' AND attempts = %(attempts)s
"""

# Runs inside the transaction that writes the job's memories: both commit or neither does. A job already done
# keeps its first result.
COMPLETE = """
UPDATE extraction_jobs
SET state = 'done', result = %(result)s, last_error = '', updated_at = now()
WHERE user_id = %(user_id)s AND job_id = %(job_id)s AND state <> 'done'
"""


def _job(row: dict[str, Any]) -> Job:
    return Job(
        id=row["job_id"], scope=Scope(row["user_id"], row["heroine_id"]), dialogue_id=row["dialogue_id"],
        dialogue=row["dialogue"], state=JobState(row["state"]), attempts=row["attempts"],
        last_error=row["last_error"],
        result=JobResult.decode(row["result"]) if row["result"] is not None else None,
        created_at=row["created_at"], updated_at=row["updated_at"],
    )


async def enqueue(db: Database, scope: Scope, dialogue_id: str, dialogue: list[dict[str, Any]]) -> Job:
    """The dialogue's job: a new pending one, or the one already made for this dialogue id."""
    params = {"user_id": scope.user_id, "heroine_id": scope.heroine_id, "dialogue_id": dialogue_id}
    async with db.transaction() as conn:
        cur = await conn.execute(ENQUEUE, params | {"job_id": uuid4(), "dialogue": Jsonb(dialogue)})
        row = await cur.fetchone()
        if row is None:
            cur = await conn.execute(BY_DIALOGUE, params)
            row = await cur.fetchone()
    assert row is not None  # inserted, or the conflicting row exists (jobs are only deleted by erasure)
    return _job(row)


_ENQUEUE = compile_statement(ENQUEUE)


def queue_enqueue(pipe: Pipeline, scope: Scope, dialogue_id: str, dialogue: list[dict[str, Any]]) -> None:
    """Queue the dialogue's job (unless it has one) in the caller's write transaction: it commits with the turns."""
    pipe.queue(_ENQUEUE, {"user_id": scope.user_id, "heroine_id": scope.heroine_id, "dialogue_id": dialogue_id,
                          "job_id": uuid4(), "dialogue": Jsonb(dialogue)})


async def by_dialogue(db: Database, scope: Scope, dialogue_id: str) -> Job:
    """The scope's job of ``dialogue_id``; NotFoundError if there is none."""
    async with db.connection() as conn:
        cur = await conn.execute(BY_DIALOGUE, {"user_id": scope.user_id, "heroine_id": scope.heroine_id,
                                               "dialogue_id": dialogue_id})
        row = await cur.fetchone()
    if row is None:
        raise NotFoundError(f"no extraction job for dialogue {dialogue_id!r} in this scope")
    return _job(row)


async def get(db: Database, user_id: str, job_id: UUID) -> Job:
    """One job of the player; NotFoundError if there is none."""
    async with db.connection() as conn:
        cur = await conn.execute(BY_ID, {"user_id": user_id, "job_id": job_id})
        row = await cur.fetchone()
    if row is None:
        raise NotFoundError(f"no extraction job {job_id} for this player")
    return _job(row)


async def take_due(db: Database, lease: timedelta) -> Job | None:
    """Lease the earliest due job no other worker holds, if any, counting the attempt."""
    async with db.connection() as conn:
        due = await (await conn.execute(DUE, {"candidates": DUE_CANDIDATES})).fetchall()
    for row in due:
        job = await take(db, row["user_id"], row["job_id"], lease)
        if job is not None:
            return job
    return None


async def take(db: Database, user_id: str, job_id: UUID, lease: timedelta) -> Job | None:
    """Lease one job now if it is not finished and no one holds it (the synchronous mode)."""
    async with db.transaction() as conn:
        row = await (await conn.execute(TAKE_ONE, {"lease": lease, "user_id": user_id, "job_id": job_id})).fetchone()
    return _job(row) if row is not None else None


async def fail_attempt(db: Database, job: Job, error: str, retry_in: timedelta | None) -> None:
    """Record a failed attempt: due again after ``retry_in``, or failed for good when None."""
    async with db.transaction() as conn:
        await conn.execute(FAIL_ATTEMPT, {
            "user_id": job.scope.user_id, "job_id": job.id, "attempts": job.attempts, "error": error[:2000],
            "state": JobState.PENDING.value if retry_in is not None else JobState.FAILED.value,
            "delay": retry_in or timedelta(0),
        })


_COMPLETE = compile_statement(sql.SQL(COMPLETE))


def _complete_params(job_id: UUID, scope: Scope, result: JobResult) -> dict[str, Any]:
    return {"user_id": scope.user_id, "job_id": job_id, "result": Jsonb(result.encode())}


def queue_complete(pipe: Pipeline, job_id: UUID, scope: Scope, result: JobResult) -> None:
    """Mark the job done with its result, queued in the caller's write transaction."""
    pipe.queue(_COMPLETE, _complete_params(job_id, scope, result))


async def complete_alone(db: Database, job_id: UUID, scope: Scope, result: JobResult) -> None:
    """Mark a job done that wrote no memories (every fact rejected, or none found)."""
    async with db.connection() as conn:
        await conn.execute(COMPLETE, _complete_params(job_id, scope, result))
