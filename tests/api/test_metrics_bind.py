"""``/metrics`` listens on the interface ``--host`` names, not on every interface."""

from __future__ import annotations

import os
from dataclasses import replace

import psutil
from npc_memory.config import Config
from npc_memory.server import serving
from ports import free_port


async def test_metrics_bind_the_configured_host(config: Config) -> None:
    """Serve with host 127.0.0.1 and a metrics port: the /metrics socket listens on 127.0.0.1 only."""
    metrics_port = free_port()
    served = replace(config, server=replace(config.server, host="127.0.0.1", port=0),
                     security=replace(config.security, metrics_port=metrics_port))
    async with serving(served):
        listening = [c.laddr for c in psutil.Process(os.getpid()).net_connections(kind="inet")
                     if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == metrics_port]
    assert [a.ip for a in listening] == ["127.0.0.1"]
