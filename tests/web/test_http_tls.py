"""The HTTP port speaks TLS when the gRPC port does: the same certificate, and a Secure sign-in cookie."""

from __future__ import annotations

import ssl
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from certs import make_ca, make_leaf
from npc_memory.config import Config
from npc_memory.config.http import HttpConfig
from npc_memory.config.server import SecurityConfig
from npc_memory.engine import MemoryEngine
from npc_memory.server import create_server
from npc_memory.server.serve import started
from web_face import KEYS, READER_KEY


async def test_the_http_port_uses_the_grpc_port_s_certificate(
    engine: MemoryEngine, config: Config, tmp_path: Path,
) -> None:
    """HTTPS answers with the configured certificate, plain HTTP does not, and the sign-in cookie is Secure."""
    _ca, ca_cert, ca_key = make_ca(tmp_path)
    leaf = make_leaf(tmp_path, "server", ca_cert, ca_key)
    security = SecurityConfig(tls_cert=leaf.cert, tls_key=leaf.key)
    settings = replace(config, security=security, http=HttpConfig(port=0))
    server, _port, _health = await create_server(engine, "127.0.0.1:0", security, KEYS)
    trust = ssl.create_default_context(cafile=str(tmp_path / "ca.crt"))
    try:
        async with started(settings, engine, server, KEYS, "127.0.0.1", False) as http_port:
            async with httpx.AsyncClient(verify=trust, timeout=30) as https:
                health = await https.get(f"https://localhost:{http_port}/healthz")
                signed = await https.post(f"https://localhost:{http_port}/login", data={"key": READER_KEY})
            async with httpx.AsyncClient(timeout=10) as plain:
                with pytest.raises(httpx.HTTPError):
                    await plain.get(f"http://localhost:{http_port}/healthz")
    finally:
        await server.stop(0)
    assert health.text == "ok\n"
    assert signed.status_code == 303
    cookie = signed.headers["set-cookie"].lower()
    assert "httponly" in cookie
    assert "secure" in cookie
    assert "samesite=strict" in cookie
