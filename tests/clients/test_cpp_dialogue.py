"""The C++ client's StoreDialogue (NpcMemoryCore, shared with the Unreal plugin) on the live server."""

from __future__ import annotations

from pathlib import Path

from npc_memory.domain.model import Scope
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc
from test_cpp_client import _run, cli

__all__ = ["cli"]  # the session fixture that builds npc_memory_cli


async def test_cpp_stores_a_dialogue_continues_it_and_names_bad_fields(
    cli: Path, server_port: int, stub: svc_grpc.MemoryServiceAsyncStub, scope: Scope
) -> None:
    """Two turns, then a third at position 2 and a resend; the turns read back as sources at their places."""
    code, out, err = await _run(cli, server_port, "dialogue", scope.user_id, scope.heroine_id, "cafe",
                                "heroine=레티아:카페 가봤어?", "user=민수:응 어제 갔어")
    assert code == 0, err
    first = [line.split("\t") for line in out.splitlines()]
    assert [outcome for _, outcome in first] == ["created", "created"]
    code, out, err = await _run(cli, server_port, "dialogue", scope.user_id, scope.heroine_id, "cafe",
                                "heroine:맛있었어?", "--first-position", "2")
    assert code == 0, err
    (third_id, outcome), = (line.split("\t") for line in out.splitlines())
    assert outcome == "created"
    code, out, _ = await _run(cli, server_port, "dialogue", scope.user_id, scope.heroine_id, "cafe",
                              "heroine=레티아:카페 가봤어?")
    assert out.split() == [first[0][0], "duplicate"]
    wire = pb.Scope(user_id=scope.user_id, heroine_id=scope.heroine_id)
    third = (await stub.GetMemory(svc.GetMemoryRequest(scope=wire, memory_id=third_id))).memory
    assert (third.tier, third.dialogue_id, third.dialogue_position, third.content) == (
        pb.TIER_SOURCE, "cafe", 2, "맛있었어?")
    second = (await stub.GetMemory(svc.GetMemoryRequest(scope=wire, memory_id=first[1][0]))).memory
    assert second.speaker_name == "민수"
    code, _, err = await _run(cli, server_port, "dialogue", scope.user_id, scope.heroine_id, "cafe", "user:",
                              "--first-position", "-3")
    assert code == 2
    assert "violation dialogue.turns[0].text" in err
    assert "violation first_position" in err
