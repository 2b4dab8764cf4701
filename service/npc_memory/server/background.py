"""What ``serve`` runs beside the gRPC server: the health watcher and the retention schedule."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import UTC, datetime

from grpc_health.v1 import health, health_pb2
from npc_memory_client.v1 import memory_service_pb2

from npc_memory.domain.retention import RetentionPolicies
from npc_memory.engine import MemoryEngine
from npc_memory.errors import NpcMemoryError
from npc_memory.ops import metrics
from npc_memory.store.pool import Database
from npc_memory.store.retention import maintain

log = logging.getLogger(__name__)

SERVICE_NAME = memory_service_pb2.DESCRIPTOR.services_by_name["MemoryService"].full_name
HEALTH_INTERVAL_SECONDS = 0.5
HEALTH_TIMEOUT_SECONDS = 0.8


async def _healthy(engine: MemoryEngine, ping_timeout: float) -> bool:
    """Whether the database and the embedder both answer a ping within ``ping_timeout`` seconds."""
    try:
        # A pool waiting for a dead server would wait its whole connect timeout; the ping gets less.
        async with asyncio.timeout(ping_timeout):
            await engine.db.ping()
            await engine.embedder.ping()
    except TimeoutError:
        log.warning("health check failed: no answer within %.1fs", ping_timeout)
        return False
    except NpcMemoryError as exc:
        log.warning("health check failed: %s", exc)
        return False
    return True


async def watch_health(
    engine: MemoryEngine, servicer: health.aio.HealthServicer,
    interval: float = HEALTH_INTERVAL_SECONDS, ping_timeout: float = HEALTH_TIMEOUT_SECONDS,
) -> None:
    """Report SERVING while the database and embedder answer, NOT_SERVING while they do not.

    A change is seen within ``interval + ping_timeout`` seconds; a failed ping is re-checked at once before the
    status flips, so one dropped pooled connection does not mark the service down.
    """
    serving = health_pb2.HealthCheckResponse.SERVING
    not_serving = health_pb2.HealthCheckResponse.NOT_SERVING
    while True:
        healthy = await _healthy(engine, ping_timeout) or await _healthy(engine, ping_timeout / 2)
        for name in ("", SERVICE_NAME):
            await servicer.set(name, serving if healthy else not_serving)
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


async def sample_pool(db: Database, interval: float = 5.0) -> None:
    """Copy the pool's statistics into the gauges every ``interval`` seconds."""
    while True:
        stats = db.stats()
        metrics.POOL_SIZE.set(stats.get("pool_size", 0))
        metrics.POOL_AVAILABLE.set(stats.get("pool_available", 0))
        metrics.POOL_WAITING.set(stats.get("requests_waiting", 0))
        metrics.POOL_WAIT_MS.set(stats.get("requests_wait_ms", 0))
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.sleep(interval)
