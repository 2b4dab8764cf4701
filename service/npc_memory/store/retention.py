"""Forgetting: close the memories a scope's retention policy retires (close_reason 'retired'; kept as history)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from psycopg import sql

from npc_memory.domain.model import Scope
from npc_memory.domain.retention import RetentionPolicies, RetentionPolicy, RetentionRow, to_retire
from npc_memory.store import changes, idempotency
from npc_memory.store.pool import Database
from npc_memory.store.view import VISIBLE, with_view
from npc_memory.store.writes import scope_params

log = logging.getLogger(__name__)

SCOPES_OVER = """
SELECT user_id, heroine_id, count(*) AS valid
FROM user_memories
WHERE invalid_at IS NULL
GROUP BY user_id, heroine_id
HAVING count(*) > %(smallest_max)s
"""

# The live timeline's valid rows: retention forgets on the timeline the player plays. A saved or abandoned
# view keeps what it held (a retirement after a save point is a change of the live timeline only). A memory
# that a valid memory was distilled from (a DERIVED_FROM link's target) is kept: the knowledge or gist built on
# it would lose its ground. It counts toward the scope's total but is never chosen (`grounds`).
VALID_ROWS = with_view(sql.SQL("""
SELECT m.id, m.importance, m.valid_at,
       EXISTS (SELECT 1 FROM memory_links l
               JOIN user_memories c ON c.user_id = l.user_id AND c.id = l.from_id AND c.invalid_at IS NULL
               WHERE l.user_id = %(user_id)s AND l.heroine_id = %(heroine_id)s AND l.to_id = m.id
                 AND l.kind = 'derived_from') AS grounds
FROM {visible} m WHERE m.invalid_at IS NULL
""").format(visible=VISIBLE))


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
    params = scope_params(scope)
    async with db.transaction() as conn:
        await conn.execute(changes.LOCK_SCOPE, params)
        live = await changes.live_timeline(conn, scope.user_id)
        cur = await conn.execute(VALID_ROWS, params)
        rows = [RetentionRow(r["id"], r["importance"], r["valid_at"], r["grounds"]) for r in await cur.fetchall()]
        ids = to_retire(rows, policy)
        if ids:
            # Retired now in business time; a row valid from a later game time is retired the instant it begins.
            await changes.apply(conn, scope, [changes.close_params(ids, now, "retired", only_open=True)], live)
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
