"""Forgetting: close the memories a scope's retention policy retires (close_reason 'retired'; kept as history)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from npc_memory.domain.model import Scope
from npc_memory.domain.retention import RetentionPolicies, RetentionPolicy, RetentionRow, to_retire
from npc_memory.store import idempotency
from npc_memory.store.pool import Database
from npc_memory.store.writes import LOCK_SCOPE

log = logging.getLogger(__name__)

SCOPES_OVER = """
SELECT user_id, heroine_id, count(*) AS valid
FROM user_memories
WHERE invalid_at IS NULL
GROUP BY user_id, heroine_id
HAVING count(*) > %(smallest_max)s
"""

VALID_ROWS = """
SELECT id, importance, valid_at FROM user_memories
WHERE user_id = %(user_id)s AND heroine_id = %(heroine_id)s AND invalid_at IS NULL
"""

# Retired now in business time; a row valid from a later game time is retired the instant it begins.
RETIRE = """
UPDATE user_memories
SET invalid_at = GREATEST(%(now)s, valid_at), close_reason = 'retired', updated_at = now()
WHERE user_id = %(user_id)s AND heroine_id = %(heroine_id)s AND id = ANY(%(ids)s) AND invalid_at IS NULL
"""


@dataclass(frozen=True)
class MaintenanceReport:
    """What one maintenance pass did."""

    scopes: int
    """Scopes over their limit that were examined."""
    retired: int
    """Memories retired."""
    pruned_requests: int
    """Expired idempotency keys deleted."""


async def retain_scope(db: Database, scope: Scope, policy: RetentionPolicy, now: datetime) -> list[UUID]:
    """Apply a policy to one scope under its write lock; return the ids retired."""
    params = {"user_id": scope.user_id, "heroine_id": scope.heroine_id}
    async with db.transaction() as conn:
        await conn.execute(LOCK_SCOPE, params)
        cur = await conn.execute(VALID_ROWS, params)
        rows = [RetentionRow(r["id"], r["importance"], r["valid_at"]) for r in await cur.fetchall()]
        ids = to_retire(rows, policy)
        if ids:
            await conn.execute(RETIRE, params | {"ids": ids, "now": now})
    return ids


async def retain(db: Database, policies: RetentionPolicies, now: datetime) -> tuple[int, int]:
    """Apply every heroine's policy to each scope over its limit; return (scopes examined, memories retired)."""
    smallest = policies.smallest_limit()
    if smallest is None:
        return 0, 0
    async with db.connection() as conn:
        cur = await conn.execute(SCOPES_OVER, {"smallest_max": smallest})
        over = [(Scope(r["user_id"], r["heroine_id"]), r["valid"]) for r in await cur.fetchall()]
    scopes = retired = 0
    for scope, valid in over:
        policy = policies.policy_for(scope.heroine_id)
        if policy.max_valid <= 0 or valid <= policy.max_valid:
            continue
        scopes += 1
        retired += len(await retain_scope(db, scope, policy, now))
    return scopes, retired


async def maintain(
    db: Database, policies: RetentionPolicies, idempotency_hours: float, now: datetime
) -> MaintenanceReport:
    """One pass of housekeeping: retention policies, then idempotency keys older than ``idempotency_hours``."""
    scopes, retired = await retain(db, policies, now)
    pruned = await idempotency.prune(db, idempotency_hours)
    log.info("maintenance: %d scope(s) over their limit, %d memory(ies) retired, %d expired key(s) pruned",
             scopes, retired, pruned)
    return MaintenanceReport(scopes, retired, pruned)
