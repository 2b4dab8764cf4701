"""The write transaction: duplicates, slot supersession, explicit supersedes, insert — all or nothing."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from npc_memory.domain.model import PreparedMemory, Scope, StoreOutcome, StoreResult
from npc_memory.domain.write_rules import SlotRow, place_in_slot
from npc_memory.errors import FailedPreconditionError, InvalidArgumentError
from npc_memory.store.pool import Connection, Database

# Writers of one scope queue behind each other; other scopes never wait.
LOCK_SCOPE = "SELECT pg_advisory_xact_lock(hashtextextended(%(user_id)s || '/' || %(heroine_id)s, 0))"

FIND_DUPLICATE = """
SELECT id, importance
FROM user_memories
WHERE user_id = %(user_id)s AND heroine_id = %(heroine_id)s
  AND subject = %(subject)s AND subject_id = %(subject_id)s
  AND invalid_at IS NULL
  AND (content_key = %(content_key)s OR 1 - (embedding <=> %(embedding)s) >= %(threshold)s)
ORDER BY content_key = %(content_key)s DESC, embedding <=> %(embedding)s
LIMIT 1
"""

RAISE_IMPORTANCE = """
UPDATE user_memories SET importance = %(importance)s, updated_at = now()
WHERE id = %(id)s AND importance < %(importance)s
"""

SLOT_TIMELINE = """
SELECT id, valid_at, invalid_at
FROM user_memories
WHERE user_id = %(user_id)s AND heroine_id = %(heroine_id)s
  AND subject = %(subject)s AND subject_id = %(subject_id)s AND slot = %(slot)s
  AND (close_reason IS NULL OR close_reason = 'superseded')
FOR UPDATE
"""

TARGETS = """
SELECT id, valid_at, invalid_at
FROM user_memories
WHERE user_id = %(user_id)s AND heroine_id = %(heroine_id)s AND id = ANY(%(ids)s)
FOR UPDATE
"""

CLOSE = """
UPDATE user_memories
SET invalid_at = %(invalid_at)s, close_reason = 'superseded', superseded_by = %(successor)s, updated_at = now()
WHERE id = %(id)s
"""

INSERT = """
INSERT INTO user_memories (
    id, user_id, heroine_id, speaker, subject, subject_id, content_type, content, content_key,
    importance, tier, slot, metadata, embedding, embedding_model, terms,
    valid_at, invalid_at, close_reason, superseded_by
) VALUES (
    %(id)s, %(user_id)s, %(heroine_id)s, %(speaker)s, %(subject)s, %(subject_id)s, %(content_type)s,
    %(content)s, %(content_key)s, %(importance)s, %(tier)s, %(slot)s, %(metadata)s, %(embedding)s,
    %(embedding_model)s, %(terms)s, %(valid_at)s, %(invalid_at)s, %(close_reason)s, %(superseded_by)s
)
"""


def insert_params(scope: Scope, item: PreparedMemory, successor: tuple[UUID, datetime] | None) -> dict[str, Any]:
    """The INSERT parameters of one prepared fact; ``successor`` makes it history closed at that version."""
    fact = item.fact
    return {
        "id": item.id,
        "user_id": scope.user_id,
        "heroine_id": scope.heroine_id,
        "speaker": fact.speaker.value,
        "subject": fact.subject.value,
        "subject_id": fact.subject_id,
        "content_type": fact.content_type.value,
        "content": fact.content,
        "content_key": item.content_key,
        "importance": fact.importance,
        "tier": fact.tier.value,
        "slot": fact.slot,
        "metadata": Jsonb(fact.metadata),
        "embedding": item.embedding,
        "embedding_model": item.embedding_model,
        "terms": list(item.terms),
        "valid_at": item.valid_at,
        "invalid_at": successor[1] if successor else None,
        "close_reason": "superseded" if successor else None,
        "superseded_by": successor[0] if successor else None,
    }


async def _find_duplicate(
    conn: Connection, scope: Scope, item: PreparedMemory, threshold: float
) -> UUID | None:
    fact = item.fact
    cur = await conn.execute(FIND_DUPLICATE, {
        "user_id": scope.user_id, "heroine_id": scope.heroine_id, "subject": fact.subject.value,
        "subject_id": fact.subject_id, "content_key": item.content_key, "embedding": item.embedding,
        "threshold": threshold,
    })
    row = await cur.fetchone()
    if row is None:
        return None
    if row["importance"] < fact.importance:
        await conn.execute(RAISE_IMPORTANCE, {"id": row["id"], "importance": fact.importance})
    dup_id: UUID = row["id"]
    return dup_id


async def _close_explicit(conn: Connection, scope: Scope, index: int, item: PreparedMemory) -> list[UUID]:
    ids = list(dict.fromkeys(item.fact.supersedes))
    cur = await conn.execute(TARGETS, {"user_id": scope.user_id, "heroine_id": scope.heroine_id, "ids": ids})
    found = {row["id"]: row for row in await cur.fetchall()}
    closed = []
    for j, target in enumerate(item.fact.supersedes):
        field = f"memories[{index}].supersedes[{j}]"
        row = found.get(target)
        if row is None:
            raise InvalidArgumentError.single(field, f"no memory {target} in this scope")
        if row["invalid_at"] is not None:
            if target in closed:
                continue
            raise FailedPreconditionError(f"{field}: memory {target} is already closed")
        if row["valid_at"] > item.valid_at:
            raise InvalidArgumentError.single(field, f"memory {target} became valid after this fact's valid_at")
        await conn.execute(CLOSE, {"id": target, "invalid_at": item.valid_at, "successor": item.id})
        closed.append(target)
    return closed


async def _write_one(
    conn: Connection, scope: Scope, index: int, item: PreparedMemory, threshold: float
) -> StoreResult:
    dup = await _find_duplicate(conn, scope, item, threshold)
    if dup is not None:
        return StoreResult(dup, StoreOutcome.DUPLICATE)
    fact = item.fact
    successor: tuple[UUID, datetime] | None = None
    closes: SlotRow | None = None
    if fact.slot is not None:
        cur = await conn.execute(SLOT_TIMELINE, {
            "user_id": scope.user_id, "heroine_id": scope.heroine_id, "subject": fact.subject.value,
            "subject_id": fact.subject_id, "slot": fact.slot,
        })
        timeline = [SlotRow(r["id"], r["valid_at"], r["invalid_at"]) for r in await cur.fetchall()]
        placement = place_in_slot(timeline, item.valid_at)
        closes = placement.close
        if placement.successor is not None:
            successor = (placement.successor.id, placement.successor.valid_at)
    await conn.execute(INSERT, insert_params(scope, item, successor))
    superseded: list[UUID] = []
    if closes is not None:
        await conn.execute(CLOSE, {"id": closes.id, "invalid_at": item.valid_at, "successor": item.id})
        superseded.append(closes.id)
    superseded += [i for i in await _close_explicit(conn, scope, index, item) if i not in superseded]
    if successor is not None:
        return StoreResult(item.id, StoreOutcome.HISTORICAL, tuple(superseded))
    outcome = StoreOutcome.SUPERSEDED if superseded else StoreOutcome.CREATED
    return StoreResult(item.id, outcome, tuple(superseded))


async def store_memories(
    db: Database, scope: Scope, items: Sequence[PreparedMemory], duplicate_threshold: float
) -> list[StoreResult]:
    """Write a batch in one transaction under the scope's lock; any error rolls all of it back."""
    async with db.transaction() as conn:
        await conn.execute(LOCK_SCOPE, {"user_id": scope.user_id, "heroine_id": scope.heroine_id})
        return [await _write_one(conn, scope, i, item, duplicate_threshold) for i, item in enumerate(items)]
