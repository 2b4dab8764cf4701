"""A local TCP port for a test's server, or for a call that must find nothing listening."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port on 127.0.0.1 nothing listens on right now (bound, read, released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
