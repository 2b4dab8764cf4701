"""Unity package and Unreal plugin completeness: manifests parse, assets have stable metas, wrappers cover code."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
UNITY = ROOT / "clients" / "unity"
UNREAL = ROOT / "clients" / "unreal"
GENERATED_CC = ROOT / "clients" / "unreal" / "Source" / "ThirdParty" / "NpcMemoryProto" / "npc_memory" / "v1"


def _unity_assets() -> list[Path]:
    def hidden(p: Path) -> bool:
        return any(part.startswith(".") or part.endswith("~") for part in p.relative_to(UNITY).parts)

    return sorted(p for p in UNITY.rglob("*") if p.suffix != ".meta" and not hidden(p))


def test_unity_manifest_and_asmdef_parse() -> None:
    """package.json names a reverse-DNS package with a Unity version and an existing sample; the asmdef parses."""
    manifest = json.loads((UNITY / "package.json").read_text(encoding="utf-8"))
    assert re.fullmatch(r"[a-z0-9-]+(\.[a-z0-9-]+){2,}", manifest["name"])
    assert re.fullmatch(r"\d+\.\d+\.\d+", manifest["version"])
    assert re.fullmatch(r"20\d\d\.\d", manifest["unity"])
    for sample in manifest["samples"]:
        assert list((UNITY / sample["path"]).glob("*.cs")), sample
    asmdef = json.loads((UNITY / "Runtime" / "NpcMemory.Client.asmdef").read_text(encoding="utf-8"))
    assert asmdef["name"] == "NpcMemory.Client"


def test_every_unity_asset_has_its_stable_meta(tmp_path: Path) -> None:
    """Each asset has a .meta equal to what clients/tools/unity_meta.py writes; no orphan metas; GUIDs unique."""
    assets = _unity_assets()
    assert any(p.name == "NpcMemoryClient.cs" for p in assets)
    metas = {p.with_name(p.name + ".meta") for p in assets}
    committed = {p for p in UNITY.rglob("*.meta") if not any(s.endswith("~") for s in p.relative_to(UNITY).parts)}
    assert committed == metas
    copy = tmp_path / "unity"
    subprocess.run(["cp", "-R", str(UNITY), str(copy)], check=True)
    for meta in copy.rglob("*.meta"):
        meta.unlink()
    subprocess.run([sys.executable, str(ROOT / "clients" / "tools" / "unity_meta.py"), str(copy)], check=True)
    for meta in metas:
        assert (copy / meta.relative_to(UNITY)).read_text() == meta.read_text(), meta
    guids = [re.search(r"^guid: ([0-9a-f]{32})$", m.read_text(), re.MULTILINE) for m in metas]
    assert all(guids)
    assert len({g.group(1) for g in guids if g}) == len(metas)


def test_unreal_plugin_descriptor_and_module_agree() -> None:
    """The .uplugin parses and each module it lists has a Build.cs whose ModuleRules class has its name."""
    plugin = json.loads((UNREAL / "NpcMemory.uplugin").read_text(encoding="utf-8"))
    assert plugin["FileVersion"] == 3
    for module in plugin["Modules"]:
        build = UNREAL / "Source" / module["Name"] / f"{module['Name']}.Build.cs"
        assert f"public class {module['Name']} : ModuleRules" in build.read_text(encoding="utf-8")
        assert module["Type"] == "Runtime"


def test_unreal_wrappers_compile_each_generated_file_once() -> None:
    """Exactly one NpcMemoryProto*.cpp includes each generated .cc, and clients/cpp's CMake builds all of them."""
    private = UNREAL / "Source" / "NpcMemory" / "Private"
    wrappers = sorted(private.glob("NpcMemoryProto*.cpp"))
    included = [
        m for w in wrappers for m in re.findall(r'#include "npc_memory/v1/([^"]+\.cc)"', w.read_text(encoding="utf-8"))
    ]
    assert sorted(included) == sorted(p.name for p in GENERATED_CC.glob("*.cc"))
    cmake = (ROOT / "clients" / "cpp" / "CMakeLists.txt").read_text(encoding="utf-8")
    for w in wrappers:
        assert f"${{UNREAL_PRIVATE}}/{w.name}" in cmake
    assert "${UNREAL_PRIVATE}/NpcMemoryCore.cpp" in cmake
