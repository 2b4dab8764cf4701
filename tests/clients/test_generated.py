"""The committed generated code (Python, C++, Unreal copy, C# for Unity) is exactly what clients/generate makes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

GENERATED_DIRS = (
    "clients/python/npc_memory_client/v1",
    "clients/cpp/generated",
    "clients/unreal/Source/ThirdParty/NpcMemoryProto",
    "clients/unity/Runtime/Generated",
)


def _files(base: Path, rel: str) -> dict[str, bytes]:
    top = base / rel
    return {
        p.relative_to(base).as_posix(): p.read_bytes()
        for p in sorted(top.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh run of clients/generate into an empty directory."""
    out = tmp_path_factory.mktemp("generated")
    env = {**os.environ, "PYTHON": sys.executable}
    subprocess.run([str(ROOT / "clients" / "generate"), "--out", str(out)], check=True, env=env, timeout=300)
    return out


@pytest.mark.parametrize("rel", GENERATED_DIRS)
def test_committed_generated_code_is_fresh(regenerated: Path, rel: str) -> None:
    """Every committed file under a generated directory equals the regenerated one, with none missing or extra."""
    committed, fresh = _files(ROOT, rel), _files(regenerated, rel)
    assert fresh, f"clients/generate wrote nothing under {rel}"
    assert sorted(committed) == sorted(fresh), f"{rel}: run clients/generate and commit the result"
    stale = [name for name in fresh if committed[name] != fresh[name]]
    assert not stale, f"stale generated files (run clients/generate): {stale}"


def test_unreal_plugin_carries_the_same_cpp_as_the_cpp_client() -> None:
    """The Unreal plugin's generated C++ is byte-identical to what the tested C++ client compiles."""
    cpp, unreal = _files(ROOT, GENERATED_DIRS[1]), _files(ROOT, GENERATED_DIRS[2])
    strip = len(GENERATED_DIRS[1]), len(GENERATED_DIRS[2])
    assert {k[strip[0]:]: v for k, v in cpp.items()} == {k[strip[1]:]: v for k, v in unreal.items()}
    assert any(k.endswith("memory_service.grpc.pb.h") for k in cpp)


def test_generation_is_deterministic(regenerated: Path, tmp_path: Path) -> None:
    """Two runs of clients/generate produce identical bytes (stable Unity GUIDs, no timestamps)."""
    env = {**os.environ, "PYTHON": sys.executable}
    subprocess.run([str(ROOT / "clients" / "generate"), "--out", str(tmp_path)], check=True, env=env, timeout=300)
    for rel in GENERATED_DIRS:
        assert _files(tmp_path, rel) == _files(regenerated, rel), rel


def test_generated_files_are_marked_generated_for_git() -> None:
    """Git attributes mark every generated file linguist-generated, so reviews and language statistics skip them."""
    files = [name for rel in GENERATED_DIRS for name in _files(ROOT, rel)]
    assert any(name.endswith("_pb2.py") for name in files)
    out = subprocess.run(
        ["git", "check-attr", "linguist-generated", "--", *files], cwd=ROOT, check=True, capture_output=True,
        text=True, timeout=60,
    ).stdout
    unmarked = [line for line in out.splitlines() if not line.endswith(": true")]
    assert not unmarked, unmarked
