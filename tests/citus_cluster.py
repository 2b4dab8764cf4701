"""The Citus cluster of ``scripts/citus`` (a coordinator and two workers on localhost) and databases on it."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "citus"


def _citus(*args: str) -> str:
    """The last line ``scripts/citus`` prints; its error output in the assertion when it fails."""
    done = subprocess.run([SCRIPT, *args], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, f"scripts/citus {' '.join(args)} failed (scripts/build-extensions builds Citus):\n" \
                                 f"{done.stderr}"
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""


@contextmanager
def running_cluster() -> Iterator[None]:
    """A running cluster for the block: started (and stopped after) unless it was up already."""
    was_up = subprocess.run([SCRIPT, "status"], check=False).returncode == 0
    _citus("up")
    try:
        yield
    finally:
        if not was_up:
            _citus("down")


@contextmanager
def citus_database(prefix: str) -> Iterator[str]:
    """A new database with Citus on every node of the running cluster, its workers added; dropped on exit."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    url = _citus("createdb", name)
    try:
        yield url
    finally:
        _citus("dropdb", name)
