"""The C++ client (clients/cpp: the Unreal plugin's NpcMemoryCore + generated code, Debian gRPC) on the live server."""

from __future__ import annotations

import asyncio
import fcntl
import re
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest
from npc_memory.config.server import SecurityConfig
from npc_memory.domain.model import Scope
from npc_memory.engine import MemoryEngine
from npc_memory.ops.keys import KeyRing, hash_key
from npc_memory.server import create_server
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc
from ports import free_port

ROOT = Path(__file__).resolve().parents[2]
CPP = ROOT / "clients" / "cpp"
UUID_LEN = 36


@pytest.fixture(scope="session")
def cli() -> Path:
    """npc_memory_cli built with CMake in clients/cpp/build (git-ignored, reused, locked against parallel runs)."""
    for tool in ("cmake", "g++", "pkg-config"):
        assert shutil.which(tool), f"{tool} is missing: run scripts/setup --dev"
    build = CPP / "build"
    build.mkdir(exist_ok=True)
    with (build / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        subprocess.run(
            ["cmake", "-S", str(CPP), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release"],
            check=True, capture_output=True, timeout=300,
        )
        subprocess.run(["cmake", "--build", str(build), "-j2"], check=True, capture_output=True, timeout=900)
    binary = build / "npc_memory_cli"
    assert binary.is_file()
    return binary


async def _run(cli: Path, port: int, *args: str) -> tuple[int, str, str]:
    """Run the CLI without blocking the event loop that serves the test server (60 s deadline: a cold embedder)."""
    proc = await asyncio.create_subprocess_exec(
        str(cli), "--target", f"127.0.0.1:{port}", "--timeout", "60", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_cpp_stores_korean_and_finds_it_first(cli: Path, server_port: int, scope: Scope) -> None:
    """Korean facts stored by the C++ client come back, the right one first, for a paraphrased question."""
    u, h = scope.user_id, scope.heroine_id
    facts = ("고양이를 좋아함", "매운 음식을 못 먹음", "바다를 무서워함")
    code, out, err = await _run(cli, server_port, "store", u, h, *facts)
    assert code == 0, err
    rows = [line.split("\t") for line in out.splitlines()]
    assert [r[1] for r in rows] == ["created"] * 3
    assert all(len(r[0]) == UUID_LEN for r in rows)
    code, out, err = await _run(cli, server_port, "search", u, h, "고양이 좋아해?", "--limit", "3")
    assert code == 0, err
    hits = [line.split("\t") for line in out.splitlines()]
    assert len(hits) == 3
    assert hits[0][5] == "고양이를 좋아함"
    assert hits[0][4] == rows[0][0]
    assert float(hits[0][3]) == 1.0  # the keyword side matched 고양이
    assert float(hits[0][1]) > float(hits[1][1])


async def test_cpp_writes_are_exact_for_other_clients(
    cli: Path, server_port: int, stub: svc_grpc.MemoryServiceAsyncStub, scope: Scope
) -> None:
    """What the C++ client stored reads back byte-exact (UTF-8 Korean, importance, slot) through the Python stub."""
    u, h = scope.user_id, scope.heroine_id
    code, out, err = await _run(
        cli, server_port, "store", u, h, "레티아의 생일은 3월 14일", "--importance", "9", "--subject", "heroine",
        "--slot", "birthday",
    )
    assert code == 0, err
    memory_id = out.split("\t")[0]
    got = await stub.GetMemory(svc.GetMemoryRequest(scope=pb.Scope(user_id=u, heroine_id=h), memory_id=memory_id))
    m = got.memory
    assert (m.content, m.importance, m.subject, m.subject_id, m.slot) == (
        "레티아의 생일은 3월 14일", 9, pb.SUBJECT_HEROINE, "letia", "birthday"
    )


async def test_cpp_surfaces_field_violations(cli: Path, server_port: int, scope: Scope) -> None:
    """An invalid store exits 2 and prints INVALID_ARGUMENT with each bad field parsed from google.rpc.BadRequest."""
    code, out, err = await _run(cli, server_port, "store", scope.user_id, "Not A Heroine", "", "--importance", "11")
    assert code == 2
    assert out == ""
    assert err.startswith("error 3: ")
    violations = {line.split(":")[0] for line in err.splitlines() if line.startswith("violation ")}
    assert violations == {
        "violation scope.heroine_id", "violation memories[0].content", "violation memories[0].importance",
    }
    (request_id,) = [line.split(" ", 1)[1] for line in err.splitlines() if line.startswith("request_id ")]
    assert re.fullmatch(r"[0-9a-f]{32}", request_id)  # the id the server made, from its trailing metadata


async def test_cpp_keeps_heroines_apart(cli: Path, server_port: int, scope: Scope) -> None:
    """A fact the C++ client stored for letia is not found when searching as roco."""
    code, _, err = await _run(cli, server_port, "store", scope.user_id, "letia", "비밀: 수영을 못함")
    assert code == 0, err
    code, out, err = await _run(cli, server_port, "search", scope.user_id, "roco", "수영")
    assert code == 0, err
    assert out == ""


async def test_cpp_reports_unavailable(cli: Path) -> None:
    """Against a port with no server the C++ client fails with UNAVAILABLE (14) within its deadline."""
    dead = free_port()
    code, _, err = await _run(cli, dead, "search", f"p-{uuid.uuid4().hex[:8]}", "letia", "q")
    assert code == 1
    assert err.startswith("error 14: ")
    assert "request_id" not in err  # no server answered


async def test_cpp_expands_and_searches_with_hops_and_deepen(
    cli: Path, server_port: int, stub: svc_grpc.MemoryServiceAsyncStub, scope: Scope
) -> None:
    """The C++ CLI expands twice (depth 1 then 2, no memory twice), reads hops/via back and a deepen's tier."""
    # Every fact after the first is `related` to it, so a search ranking the first reaches the others by a link.
    u, h = scope.user_id, scope.heroine_id
    stored = await stub.StoreMemories(svc.StoreMemoriesRequest(scope=pb.Scope(user_id=u, heroine_id=h), memories=[
        pb.MemoryInput(speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, content=c, tier=t, importance=i,
                       related=[pb.MemoryRef(batch_index=0)] if k else [])
        for k, (c, t, i) in enumerate([
            ("레티아의 아버지는 등대지기이다", pb.TIER_KNOWLEDGE, 9),
            ("등대에서 낡은 나침반을 선물받았다", pb.TIER_KNOWLEDGE, 1),  # 등대: evidence for a link
            ("등대", pb.TIER_GIST, 5), ("바닷가에서 조개를 주웠다", pb.TIER_SOURCE, 5),
            ("조개 목걸이를 만들었다", pb.TIER_SOURCE, 5), ("등대 불빛이 예뻤다", pb.TIER_SOURCE, 5),
        ])
    ]))
    anchor, compass = stored.results[0].memory_id, stored.results[1].memory_id
    code, out, err = await _run(cli, server_port, "expand", u, h, compass)
    assert code == 0, err
    head, *found = [line.split("\t") for line in out.splitlines()]
    assert head[:3] == ["expanded", compass, "1"]
    assert 1 <= len(found) <= 5
    assert anchor not in [f[0] for f in found]  # already linked to the compass by the game
    assert all(f[1] == "1" and f[2] for f in found)
    code, out, err = await _run(cli, server_port, "expand", u, h)
    assert code == 0, err
    head2, *found2 = [line.split("\t") for line in out.splitlines()]
    assert head2[:3] == ["expanded", compass, "2"]
    assert not {f[0] for f in found} & {f[0] for f in found2}
    assert int(head2[3]) == len(found) + len(found2)
    code, out, err = await _run(cli, server_port, "search", u, h, "등대지기 아버지", "--limit", "2", "--hops", "1")
    assert code == 0, err
    hits = [line.split("\t") for line in out.splitlines()]
    assert len(hits) <= 2
    assert hits[0][4] == anchor
    assert (hits[1][6], hits[1][7]) == ("1", anchor)  # every other memory is linked to the anchor: one is reached
    code, out, err = await _run(cli, server_port, "search", u, h, "등대", "--limit", "1", "--deepen")
    assert code == 0, err
    tier, *rows = [line.split("\t") for line in out.splitlines()]
    assert tier[0] == "tier"
    assert tier[1] in {"gist", "knowledge", "source"}
    assert len(rows) == 1


async def test_cpp_client_over_tls_with_an_api_key(cli: Path, engine: MemoryEngine, tmp_path: Path) -> None:
    """The CLI's --ca and --api-key reach a TLS server that requires a key; without the key it is refused."""
    from certs import make_ca, make_leaf

    ca, ca_cert, ca_key = make_ca(tmp_path)
    leaf = make_leaf(tmp_path, "server", ca_cert, ca_key)
    keys = tmp_path / "keys.toml"
    key = "cpp-" + "c" * 40
    keys.write_text(f'[[keys]]\nname = "cpp"\nsha256 = "{hash_key(key)}"\nuser_namespaces = ["cpp:*"]\n')
    server, port, _ = await create_server(engine, "127.0.0.1:0", SecurityConfig(tls_cert=leaf.cert, tls_key=leaf.key),
                                          KeyRing(path=keys))
    await server.start()
    try:
        user = f"cpp:{uuid.uuid4().hex[:8]}"
        tls = ("--target", f"localhost:{port}", "--ca", str(ca.cert))
        code, out, err = await _run(cli, port, *tls, "--api-key", key, "store", user, "letia", "고양이를 좋아한다")
        assert code == 0, err
        assert len(out.split("\t")[0]) == UUID_LEN
        code, _out, err = await _run(cli, port, *tls, "search", user, "letia", "고양이")
        assert code == 1
        assert "error 16" in err  # UNAUTHENTICATED
    finally:
        await server.stop(0)


async def test_cpp_builds_the_heroines_context_and_loads_a_save(cli: Path, server_port: int, scope: Scope) -> None:
    """The C++ CLI asks for the prompt block, saves, writes, loads the save: the block forgets the later write.

    The block's sections name their memories and it stays within the budget; a bad budget names the field.
    """
    u, h = scope.user_id, scope.heroine_id
    code, out, err = await _run(cli, server_port, "store", u, h, "고양이를 좋아함", "매운 음식을 못 먹음")
    assert code == 0, err
    cat = out.splitlines()[0].split("\t")[0]
    code, out, err = await _run(cli, server_port, "save", u, "before-the-secret")
    assert (code, out.strip()) == (0, "saved\t1"), err
    code, out, err = await _run(cli, server_port, "store", u, h, "레티아의 비밀 일기장을 읽어 버림")
    assert code == 0, err
    secret = out.split("\t")[0]
    code, out, err = await _run(cli, server_port, "context", u, h, "고양이 키워볼까?", "--budget", "300")
    assert code == 0, err
    head, *rest = out.splitlines()
    _, tokens, budget, _left_out, method = head.split("\t")
    assert int(budget) == 300
    assert 0 < int(tokens) <= 300
    assert method
    sections = {line.split("\t")[1]: line.split("\t")[3].split(",") for line in rest if line.startswith("section\t")}
    assert set(sections) <= {"about_player", "about_heroine", "opinions", "relevant", "recent"}
    assert cat in sections["about_player"]  # a profile fact is placed once, in its profile section
    assert "고양이를 좋아함" in out
    assert "레티아의 비밀 일기장" in out
    code, out, err = await _run(cli, server_port, "load", u, "before-the-secret")
    assert code == 0, err
    assert out.startswith("loaded\t")
    assert int(out.split("\t")[1]) > 1
    code, out, err = await _run(cli, server_port, "context", u, h, "일기장", "--language", "en")
    assert code == 0, err
    assert secret not in out
    assert "레티아의 비밀 일기장" not in out
    assert "고양이를 좋아함" in out
    code, out, err = await _run(cli, server_port, "context", u, h, "--budget", "-1")
    assert code == 2
    assert "violation token_budget:" in err
