"""A short headless Locust run against the real service: every profile, no request may fail.

Correctness under concurrency, not speed: the run is a few seconds and nothing here asserts a latency.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from npc_memory.embedding.local import MODEL_NAME
from processes import stop

from loadtest.pool import load_pool
from loadtest.seed import read_manifest, seed, write_manifest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
SERVE_TIMEOUT = 90.0
POOL = ("--pool-passages", "300", "--pool-queries", "40")


@pytest.fixture(scope="module")
def service_port(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """``npc-memory serve --port 0`` as a subprocess on the test database; its port from the start-up line."""
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    with log.open("w") as err:
        proc = subprocess.Popen(
            [str(BIN / "npc-memory"), "serve", "--port", "0", "--host", "127.0.0.1", "--database-url", database_url],
            stdout=subprocess.PIPE, stderr=err, text=True,
        )
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + SERVE_TIMEOUT
        port = 0
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            if line.startswith("npc-memory serving on port "):
                port = int(line.rsplit(" ", 1)[1])
                break
        assert port, f"service did not start: {log.read_text()[-2000:]}"
        yield port
    finally:
        stop(proc, timeout=15)


@pytest.fixture(scope="module")
def scopes_file(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """2,000 memories in new scopes, COPY-seeded into the test database, and their manifest."""
    path = tmp_path_factory.mktemp("seed") / "scopes.json"
    prefix = f"smoke-{os.getpid()}"
    scopes = seed(database_url, 2000, prefix=prefix, pool=load_pool(300, 40), progress=False)
    write_manifest(path, scopes)
    return path


def test_seeder_writes_the_planned_scopes(database_url: str, scopes_file: Path) -> None:
    """The seeded scopes hold 100-2,000 rows each and add up to the requested 2,000."""
    scopes = read_manifest(scopes_file)
    assert sum(s.rows for s in scopes) == 2000
    assert all(100 <= s.rows <= 2000 for s in scopes)


def test_seeded_rows_are_what_the_write_path_would_leave(database_url: str, scopes_file: Path) -> None:
    """Seeded rows carry the service's model label, and every closed row is superseded by a row of its scope."""
    users = [s.user_id for s in read_manifest(scopes_file)]
    with psycopg.connect(database_url) as conn:
        models = conn.execute(
            "SELECT DISTINCT embedding_model FROM user_memories WHERE user_id = ANY(%(u)s)", {"u": users}
        ).fetchall()
        recorded = conn.execute("SELECT value FROM service_settings WHERE key = 'embedding_model'").fetchone()
        closed = conn.execute(
            "SELECT m.close_reason, n.user_id = m.user_id, n.valid_at = m.invalid_at FROM user_memories m"
            " LEFT JOIN user_memories n ON n.id = m.superseded_by"
            " WHERE m.user_id = ANY(%(u)s) AND m.invalid_at IS NOT NULL", {"u": users},
        ).fetchall()
    assert models == [(MODEL_NAME,)]
    assert recorded is not None
    assert recorded[0].startswith(f"{MODEL_NAME}/")
    assert closed
    assert set(closed) == {("superseded", True, True)}


def _stats(prefix: Path) -> dict[str, dict[str, str]]:
    with Path(f"{prefix}_stats.csv").open(newline="", encoding="utf-8") as fh:
        return {row["Name"]: row for row in csv.DictReader(fh)}


@pytest.mark.parametrize("vectors", ["caller", "server"])
def test_headless_run_of_every_profile_has_no_failed_request(
    service_port: int, scopes_file: Path, tmp_path: Path, vectors: str
) -> None:
    """Eight users of all three profiles on seeded scopes for a few seconds: searches and stores happen, none fails."""
    prefix = tmp_path / "smoke"
    env = os.environ | {"PYTHONUNBUFFERED": "1"}
    result = subprocess.run(
        [str(BIN / "locust"), "-f", str(ROOT / "loadtest" / "locustfile.py"), "--host", f"127.0.0.1:{service_port}",
         "--headless", "-u", "8", "-r", "8", "-t", "8s", "--stop-timeout", "20", "--csv", str(prefix),
         "--only-summary", "--vectors", vectors, *POOL, "--scopes-file", str(scopes_file),
         "GameSessionUser", "SearchUser", "StoreUser"],
        capture_output=True, text=True, timeout=180, env=env, cwd=tmp_path, check=False,
    )
    tail = (result.stdout + result.stderr)[-4000:]
    stats = _stats(prefix)
    assert int(stats.get("SearchMemories", {}).get("Request Count", 0)) > 0, tail
    assert int(stats.get("StoreMemories", {}).get("Request Count", 0)) > 0, tail
    assert int(stats["Aggregated"]["Failure Count"]) == 0, tail
    assert result.returncode == 0, tail
