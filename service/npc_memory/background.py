"""What ``serve`` runs beside the gRPC server: the health watcher and the retention schedule."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime

from grpc_health.v1 import health, health_pb2
from npc_memory_client.v1 import memory_service_pb2

from npc_memory.domain.retention import RetentionPolicies
from npc_memory.engine import MemoryEngine
from npc_memory.errors import NpcMemoryError
from npc_memory.store.pool import Database
from npc_memory.store.retention import maintain

log = logging.getLogger(__name__)

SERVICE_NAME = memory_service_pb2.DESCRIPTOR.services_by_name["MemoryService"].full_name
HEALTH_INTERVAL_SECONDS = 2.0


async def watch_health(
    engine: MemoryEngine, servicer: health.aio.HealthServicer, interval: float = HEALTH_INTERVAL_SECONDS
) -> None:
    """Report SERVING while the database and embedder answer, NOT_SERVING while they do not."""
    serving = health_pb2.HealthCheckResponse.SERVING
    not_serving = health_pb2.HealthCheckResponse.NOT_SERVING
    while True:
        try:
            await engine.db.ping()
            await engine.embedder.ping()
            status = serving
        except NpcMemoryError as exc:
            log.warning("health check failed: %s", exc)
            status = not_serving
        for name in ("", SERVICE_NAME):
            await servicer.set(name, status)
        await asyncio.sleep(interval)


async def maintain_every(
    db: Database, interval_minutes: float, policies: RetentionPolicies, idempotency_hours: float
) -> None:
    """Apply the retention policies and prune expired keys on a schedule; a failed pass is logged and retried."""
    while True:
        await asyncio.sleep(interval_minutes * 60)
        try:
            await maintain(db, policies, idempotency_hours, datetime.now(UTC))
        except NpcMemoryError as exc:
            log.warning("maintenance failed: %s", exc)
