"""MCP: the SDK's client lists the memory tools and calls search, over streamable HTTP and over stdio."""

from __future__ import annotations

import contextlib
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from npc_memory.config import Config
from npc_memory.ops.keys import hash_key
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc
from web_face import ADMIN, READER_KEY, Face, admin_stub, face

__all__ = ["admin_stub", "face"]  # fixtures used by name

TOOLS = {"search_memories", "store_memories", "store_dialogue", "build_context"}
CAT = "레티아는 플레이어가 고양이를 좋아한다는 것을 기억한다"
SECRET = "다른 플레이어의 비밀: 금고 비밀번호는 4321"


async def _store(stub: svc_grpc.MemoryServiceAsyncStub, user_id: str, content: str) -> None:
    await stub.StoreMemories(svc.StoreMemoriesRequest(
        scope=pb.Scope(user_id=user_id, heroine_id="letia"),
        memories=[pb.MemoryInput(content=content, importance=6, subject=pb.SUBJECT_USER, speaker=pb.SPEAKER_USER,
                                 content_type=pb.CONTENT_TYPE_PREFERENCE)]), metadata=ADMIN)


@contextlib.asynccontextmanager
async def _http(face: Face, key: str | None) -> AsyncIterator[Client]:
    """An SDK client on the HTTP face's /mcp presenting ``key``; its HTTP client closed after."""
    headers = {"authorization": f"Bearer {key}"} if key else {}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http, Client(
            streamable_http_client(face.base + "/mcp", http_client=http)) as client:
        yield client


def _text(result: Any) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


async def test_mcp_over_http_lists_the_tools_and_searches(
    face: Face, admin_stub: svc_grpc.MemoryServiceAsyncStub,
) -> None:
    """The SDK client on /mcp sees the three tools; search answers the stored Korean memory with its scores."""
    mine = f"web-a:m-{uuid.uuid4().hex[:8]}"
    await _store(admin_stub, mine, CAT)
    async with _http(face, READER_KEY) as client:
        tools = await client.list_tools()
        assert {t.name for t in tools.tools} == TOOLS
        result = await client.call_tool("search_memories", {"user_id": mine, "heroine_id": "letia",
                                                            "query": "고양이"})
    assert not result.is_error
    [found] = result.structured_content["results"]
    assert found["content"] == CAT
    assert set(found["scores"]) == {"recency", "importance", "relevance", "keyword", "final"}
    assert 0 < found["scores"]["final"] <= 1


async def test_mcp_over_http_keeps_the_key_s_namespace(
    face: Face, admin_stub: svc_grpc.MemoryServiceAsyncStub,
) -> None:
    """A web-a key's tool call for a web-b player is a PERMISSION_DENIED tool error without that player's text."""
    theirs = f"web-b:m-{uuid.uuid4().hex[:8]}"
    await _store(admin_stub, theirs, SECRET)
    async with _http(face, READER_KEY) as client:
        result = await client.call_tool("search_memories", {"user_id": theirs, "heroine_id": "letia",
                                                            "query": "비밀번호"})
    assert result.is_error
    assert "PERMISSION_DENIED" in _text(result)
    assert SECRET not in _text(result)
    async with _http(face, None) as client:
        result = await client.call_tool("search_memories", {"user_id": theirs, "heroine_id": "letia",
                                                            "query": "비밀번호"})
    assert result.is_error
    assert "UNAUTHENTICATED" in _text(result)


async def test_mcp_store_then_build_context(face: Face) -> None:
    """store_memories writes through the service; build_context then packs the fact into the heroine's block."""
    mine = f"web-a:m-{uuid.uuid4().hex[:8]}"
    async with _http(face, READER_KEY) as client:
        stored = await client.call_tool("store_memories", {"user_id": mine, "heroine_id": "letia", "memories": [
            {"content": "플레이어는 비 오는 날을 좋아한다", "importance": 8, "content_type": "preference"}]})
        assert not stored.is_error
        assert stored.structured_content["results"][0]["outcome"] == "created"
        bad = await client.call_tool("store_memories", {"user_id": mine, "heroine_id": "letia", "memories": [
            {"content": "", "importance": 8}]})
        block = await client.call_tool("build_context", {"user_id": mine, "heroine_id": "letia",
                                                         "utterance": "오늘 날씨 어때?", "token_budget": 200})
    assert bad.is_error
    assert "INVALID_ARGUMENT" in _text(bad)
    assert "memories[0].content" in _text(bad)
    assert "비 오는 날" in block.structured_content["text"]
    assert 0 < block.structured_content["tokens"] <= 200


async def test_mcp_over_stdio_calls_a_running_server(face: Face, admin_stub: svc_grpc.MemoryServiceAsyncStub) -> None:
    """``npc-memory mcp --target`` over stdio: tools listed, search answers, the key's namespace holds."""
    mine, theirs = f"web-a:s-{uuid.uuid4().hex[:8]}", f"web-b:s-{uuid.uuid4().hex[:8]}"
    await _store(admin_stub, mine, CAT)
    await _store(admin_stub, theirs, SECRET)
    params = StdioServerParameters(command=sys.executable, args=[
        "-m", "npc_memory.cli", "mcp", "--target", f"127.0.0.1:{face.grpc_port}", "--api-key", READER_KEY])
    async with Client(params) as client:
        assert {t.name for t in (await client.list_tools()).tools} == TOOLS
        found = await client.call_tool("search_memories", {"user_id": mine, "heroine_id": "letia", "query": "고양이"})
        refused = await client.call_tool("search_memories", {"user_id": theirs, "heroine_id": "letia",
                                                             "query": "비밀번호"})
    assert [r["content"] for r in found.structured_content["results"]] == [CAT]
    assert refused.is_error
    assert "PERMISSION_DENIED" in _text(refused)


async def test_mcp_over_stdio_runs_the_service_itself(
    config: Config, admin_stub: svc_grpc.MemoryServiceAsyncStub, tmp_path: Path,
) -> None:
    """Without --target the command serves the configured database itself, behind the same keys file."""
    mine = f"web-a:o-{uuid.uuid4().hex[:8]}"
    await _store(admin_stub, mine, CAT)
    keys = tmp_path / "keys.toml"
    keys.write_text(f'[[keys]]\nname = "reader"\nsha256 = "{hash_key(READER_KEY)}"\nuser_namespaces = ["web-a:*"]\n',
                    encoding="utf-8")
    assert config.database.url is not None
    params = StdioServerParameters(command=sys.executable, args=[
        "-m", "npc_memory.cli", "mcp", "--database-url", config.database.url, "--api-keys-file", str(keys),
        "--api-key", READER_KEY], env={"NPC_MEMORY_LOG_JSON": "false"})
    async with Client(params, read_timeout_seconds=120) as client:
        found = await client.call_tool("search_memories", {"user_id": mine, "heroine_id": "letia", "query": "고양이"})
        refused = await client.call_tool("search_memories", {"user_id": "web-b:x", "heroine_id": "letia",
                                                             "query": "고양이"})
    assert [r["content"] for r in found.structured_content["results"]] == [CAT]
    assert "PERMISSION_DENIED" in _text(refused)


async def test_mcp_store_dialogue_keeps_the_lines_as_said(face: Face) -> None:
    """store_dialogue stores each turn as a source memory of the dialogue; another namespace's write is refused."""
    mine, theirs = f"web-a:d-{uuid.uuid4().hex[:8]}", f"web-b:d-{uuid.uuid4().hex[:8]}"
    turns = [{"speaker": "user", "text": "어제 고양이를 입양했어", "speaker_name": "민수"},
             {"speaker": "heroine", "text": "정말? 이름이 뭐야?"}]
    async with _http(face, READER_KEY) as client:
        stored = await client.call_tool("store_dialogue", {"user_id": mine, "heroine_id": "letia",
                                                           "dialogue_id": "d-1", "turns": turns})
        found = await client.call_tool("search_memories", {"user_id": mine, "heroine_id": "letia",
                                                           "query": "고양이 입양"})
        refused = await client.call_tool("store_dialogue", {"user_id": theirs, "heroine_id": "letia",
                                                            "dialogue_id": "d-1", "turns": turns})
    assert not stored.is_error, _text(stored)
    assert [t["outcome"] for t in stored.structured_content["turns"]] == ["created", "created"]
    top = found.structured_content["results"][0]
    assert top["content"] == "어제 고양이를 입양했어"
    assert top["tier"] == "source"
    assert refused.is_error
    assert "PERMISSION_DENIED" in _text(refused)
