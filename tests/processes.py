"""Stopping a command the tests started, the way an operator would: SIGTERM, then SIGKILL if it hangs."""

from __future__ import annotations

import subprocess


def stop(proc: subprocess.Popen[str], timeout: float) -> None:
    """Close the command's output, ask it to stop, and kill it if it has not stopped within ``timeout`` seconds."""
    if proc.stdout is not None:
        proc.stdout.close()
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
