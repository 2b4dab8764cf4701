"""A load run that completed no request fails loudly instead of exiting 0 with empty statistics."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

from ports import free_port

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / ".venv" / "bin"


def test_a_run_with_no_request_exits_non_zero(tmp_path: Path) -> None:
    """Locust against a listener that accepts and never answers for 3 s: 0 requests, a message, exit code 1."""
    port = free_port()
    with socket.create_server(("127.0.0.1", port)) as silent:  # a service that never answers in time
        silent.listen(64)
        result = subprocess.run(
            [str(BIN / "locust"), "-f", str(ROOT / "loadtest" / "locustfile.py"), "--host", f"127.0.0.1:{port}",
             "--headless", "-u", "2", "-r", "2", "-t", "3s", "--only-summary", "--vectors", "server", "SearchUser"],
            capture_output=True, text=True, timeout=120, cwd=tmp_path, check=False,
        )
    assert result.returncode == 1, (result.stdout + result.stderr)[-3000:]
    assert "no request completed" in result.stderr
