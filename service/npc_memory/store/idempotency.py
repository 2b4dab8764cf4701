"""Idempotency keys of StoreMemories: the first response per (scope, request_id), kept for a window."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any
from uuid import UUID

from psycopg import sql
from psycopg.types.json import Jsonb

from npc_memory.domain.errors import RequestIdReusedError
from npc_memory.domain.model import Scope, StoreOutcome, StoreResult
from npc_memory.store.compiled import compile_statement
from npc_memory.store.pipelined import Pipeline, Reply
from npc_memory.store.pool import Database

LOOKUP = """
SELECT fingerprint, response FROM store_requests
WHERE user_id = %(user_id)s AND heroine_id = %(heroine_id)s AND request_id = %(request_id)s
  AND created_at > now() - %(window)s
"""

# An expired record of the same key is replaced: the window has passed, the key is free again.
RECORD = """
INSERT INTO store_requests (user_id, heroine_id, request_id, fingerprint, response)
VALUES (%(user_id)s, %(heroine_id)s, %(request_id)s, %(fingerprint)s, %(response)s)
ON CONFLICT (user_id, heroine_id, request_id) DO UPDATE
SET fingerprint = EXCLUDED.fingerprint, response = EXCLUDED.response, created_at = EXCLUDED.created_at
"""

_LOOKUP, _RECORD = (compile_statement(sql.SQL(q)) for q in (LOOKUP, RECORD))

PRUNE = "DELETE FROM store_requests WHERE created_at <= now() - %(window)s"


def key_params(scope: Scope, request_id: str, hours: float) -> dict[str, Any]:
    """Parameters naming one key and the retention window."""
    return {
        "user_id": scope.user_id, "heroine_id": scope.heroine_id, "request_id": request_id,
        "window": timedelta(hours=hours),
    }


def encode(results: Sequence[StoreResult]) -> list[dict[str, Any]]:
    """The stored form of a response: ids and outcomes."""
    return [
        {
            "memory_id": str(r.memory_id), "outcome": r.outcome.value,
            "superseded_ids": [str(i) for i in r.superseded_ids],
        }
        for r in results
    ]


def decode(response: list[dict[str, Any]]) -> list[StoreResult]:
    """The results a stored response holds."""
    return [
        StoreResult(UUID(r["memory_id"]), StoreOutcome(r["outcome"]), tuple(UUID(i) for i in r["superseded_ids"]))
        for r in response
    ]


def replay(row: dict[str, Any] | None, request_id: str, fingerprint: str) -> list[StoreResult] | None:
    """The first response of a live key, or None; RequestIdReusedError if the key named another request."""
    if row is None:
        return None
    if row["fingerprint"] != fingerprint:
        raise RequestIdReusedError(request_id)
    return decode(row["response"])


async def lookup(
    db: Database, scope: Scope, request_id: str, fingerprint: str, hours: float
) -> list[StoreResult] | None:
    """A cheap check before embedding: the first response if this key is live (the transaction checks again)."""
    async with db.connection() as conn:
        cur = await conn.execute(LOOKUP, key_params(scope, request_id, hours))
        return replay(await cur.fetchone(), request_id, fingerprint)


def queue_lookup(pipe: Pipeline, scope: Scope, request_id: str, hours: float) -> Reply:
    """Queue the key's read in the caller's write transaction: its row for ``replay``."""
    return pipe.queue(_LOOKUP, key_params(scope, request_id, hours))


def queue_record(
    pipe: Pipeline, scope: Scope, request_id: str, fingerprint: str, results: Sequence[StoreResult]
) -> None:
    """Keep the response of a key, queued in the caller's write transaction."""
    pipe.queue(_RECORD, {
        "user_id": scope.user_id, "heroine_id": scope.heroine_id, "request_id": request_id,
        "fingerprint": fingerprint, "response": Jsonb(encode(results)),
    })


async def prune(db: Database, hours: float) -> int:
    """Delete keys older than the window; return how many."""
    async with db.transaction() as conn:
        cur = await conn.execute(PRUNE, {"window": timedelta(hours=hours)})
        return cur.rowcount
