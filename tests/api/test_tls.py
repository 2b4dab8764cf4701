"""TLS on the listener: a real handshake with certificates made here (``cryptography``), mutual TLS, the client."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from certs import make_ca, make_leaf
from grpc_health.v1 import health_pb2, health_pb2_grpc
from npc_memory.config.server import SecurityConfig
from npc_memory.engine import MemoryEngine
from npc_memory.server import create_server
from npc_memory_client import AsyncClient


async def test_tls_round_trip(engine: MemoryEngine, tmp_path: Path) -> None:
    """A store and a search over TLS with the Python client trusting only the test CA."""
    ca, ca_cert, ca_key = make_ca(tmp_path)
    leaf = make_leaf(tmp_path, "server", ca_cert, ca_key)
    server, port, _ = await create_server(
        engine, "127.0.0.1:0", SecurityConfig(tls_cert=leaf.cert, tls_key=leaf.key))
    await server.start()
    try:
        credentials = grpc.ssl_channel_credentials(root_certificates=ca.cert.read_bytes())
        async with AsyncClient(f"localhost:{port}", credentials=credentials) as client:
            stored = await client.store("tls-player", "letia", ["비 오는 날을 좋아한다고 말했다"])
            hits = await client.search("tls-player", "letia", "비 오는 날")
        assert hits[0].memory.id == stored[0].memory_id
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as plain:
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await health_pb2_grpc.HealthStub(plain).Check(health_pb2.HealthCheckRequest(), timeout=5)
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    finally:
        await server.stop(0)


async def test_mutual_tls_needs_a_client_certificate(engine: MemoryEngine, tmp_path: Path) -> None:
    """With a client CA, a client without a certificate fails the handshake and one with a signed cert passes."""
    ca, ca_cert, ca_key = make_ca(tmp_path)
    leaf = make_leaf(tmp_path, "server", ca_cert, ca_key)
    client_pem = make_leaf(tmp_path, "game-server", ca_cert, ca_key, client=True)
    server, port, health = await create_server(
        engine, "127.0.0.1:0", SecurityConfig(tls_cert=leaf.cert, tls_key=leaf.key, tls_client_ca=ca.cert))
    await server.start()
    await health.set("", health_pb2.HealthCheckResponse.SERVING)
    try:
        anonymous = grpc.ssl_channel_credentials(root_certificates=ca.cert.read_bytes())
        async with grpc.aio.secure_channel(f"localhost:{port}", anonymous) as channel:
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
        signed = grpc.ssl_channel_credentials(ca.cert.read_bytes(), client_pem.key.read_bytes(),
                                              client_pem.cert.read_bytes())
        async with grpc.aio.secure_channel(f"localhost:{port}", signed) as channel:
            reply = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
    finally:
        await server.stop(0)


async def test_certificate_files_are_reloaded(engine: MemoryEngine, tmp_path: Path) -> None:
    """Replacing the certificate files switches new connections to the new certificate without a restart."""
    old_ca, old_cert, old_key = make_ca(tmp_path)
    leaf = make_leaf(tmp_path, "server", old_cert, old_key)
    server, port, health = await create_server(
        engine, "127.0.0.1:0", SecurityConfig(tls_cert=leaf.cert, tls_key=leaf.key))
    await server.start()
    await health.set("", health_pb2.HealthCheckResponse.SERVING)
    try:
        (tmp_path / "new").mkdir()
        new_ca, new_cert, new_key = make_ca(tmp_path / "new")
        fresh = make_leaf(tmp_path / "new", "server", new_cert, new_key)
        leaf.key.write_bytes(fresh.key.read_bytes())
        leaf.cert.write_bytes(fresh.cert.read_bytes())
        trusting_new = grpc.ssl_channel_credentials(root_certificates=new_ca.cert.read_bytes())
        async with grpc.aio.secure_channel(f"localhost:{port}", trusting_new) as channel:
            reply = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
        assert old_ca.cert.read_bytes() != new_ca.cert.read_bytes()
    finally:
        await server.stop(0)
