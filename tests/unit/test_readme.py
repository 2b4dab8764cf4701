"""README.md is a first page: short, and its API table names exactly the RPCs the proto's service defines."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def proto_rpcs() -> set[str]:
    """The RPC names of every service in proto/npc_memory/v1, read from the .proto text."""
    text = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "proto").rglob("*.proto"))
    return set(re.findall(r"^\s*rpc\s+(\w+)\s*\(", text, re.MULTILINE))


def test_the_readme_is_short() -> None:
    """A first page fits on a few screens: at most 250 lines."""
    assert len(README.splitlines()) <= 250


def test_the_api_table_names_every_rpc_of_the_proto() -> None:
    """The README's API table lists each RPC of the service once, and no RPC the proto does not define."""
    section = README.split("## The API", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^\|[^|]*\| `(\w+)` \|", section, re.MULTILINE)
    assert sorted(listed) == sorted(set(listed))
    assert set(listed) == proto_rpcs()
    assert len(proto_rpcs()) >= 17
