"""The image's health probe against a real server, and the probe names the image files and manifests agree on."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from pathlib import Path

from grpc_health.v1 import health_pb2
from npc_memory.engine import MemoryEngine
from npc_memory.server import create_server
from npc_memory.server.background import SERVICE_NAME, watch_health
from ports import free_port

ROOT = Path(__file__).resolve().parents[2]
PROBE = ROOT / "docker" / "healthcheck.py"


def _probe(port: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(PROBE), str(port)], capture_output=True, text=True, timeout=30,
                          check=False)


async def test_probe_passes_on_a_serving_server(engine: MemoryEngine) -> None:
    """The HEALTHCHECK script exits 0 once the service's health watcher has seen the database and embedder."""
    server, port, health = await create_server(engine, "127.0.0.1:0")
    await server.start()
    watcher = asyncio.create_task(watch_health(engine, health, interval=0.2))
    try:
        await asyncio.sleep(0.5)
        result = await asyncio.to_thread(_probe, port)
    finally:
        watcher.cancel()
        await server.stop(0)
    assert (result.returncode, result.stderr) == (0, "")


async def test_probe_fails_while_the_service_is_not_serving(engine: MemoryEngine) -> None:
    """NOT_SERVING (as during a database outage) makes the script exit 1 and say so."""
    server, port, health = await create_server(engine, "127.0.0.1:0")
    await server.start()
    try:
        await health.set(SERVICE_NAME, health_pb2.HealthCheckResponse.NOT_SERVING)
        result = await asyncio.to_thread(_probe, port)
    finally:
        await server.stop(0)
    assert result.returncode == 1
    assert "NOT_SERVING" in result.stderr


def test_probe_fails_when_nothing_listens() -> None:
    """A closed port makes the script exit 1 with UNAVAILABLE, within its own timeout."""
    result = _probe(free_port())
    assert result.returncode == 1
    assert "UNAVAILABLE" in result.stderr


def test_image_and_manifests_probe_the_memory_service() -> None:
    """The probe script, the Dockerfile and the Kubernetes probes name the service the server registers."""
    assert re.search(rf'^SERVICE = "{re.escape(SERVICE_NAME)}"$', PROBE.read_text(), re.MULTILINE)
    dockerfile = (ROOT / "docker" / "Dockerfile").read_text()
    assert "COPY docker/healthcheck.py /opt/npc-memory/healthcheck.py" in dockerfile
    assert 'CMD ["python", "/opt/npc-memory/healthcheck.py"]' in dockerfile
    manifest = (ROOT / "deploy" / "kubernetes" / "npc-memory.yaml").read_text()
    assert manifest.count(f"service: {SERVICE_NAME}") == 2  # the startup and readiness probes
