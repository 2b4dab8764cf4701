"""scripts/serve installs only when something changed, so a second start goes straight to the service."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _serve_help() -> tuple[subprocess.CompletedProcess[str], float]:
    start = time.monotonic()
    done = subprocess.run([str(ROOT / "scripts" / "serve"), "--help"], capture_output=True, text=True,
                          timeout=600, check=False, cwd=ROOT)
    return done, time.monotonic() - start


def test_a_second_start_skips_the_install() -> None:
    """After one run (which installs if the stamp is stale), the next runs no pip and reaches `serve` at once."""
    first, _ = _serve_help()
    assert first.returncode == 0, first.stderr[-2000:]
    second, seconds = _serve_help()
    assert second.returncode == 0, second.stderr[-2000:]
    assert "installing" not in second.stderr
    assert "--metrics-port" in second.stdout  # it ran `npc-memory serve --help`
    assert seconds < 15, f"a second scripts/serve took {seconds:.1f} s"
    assert (ROOT / ".venv" / ".npc-memory-serve-stamp").read_text().strip()
