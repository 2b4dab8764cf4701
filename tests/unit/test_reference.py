"""docs/reference/ is generated (scripts/reference.py): a page that differs from what the generator writes fails."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_reference_pages_are_fresh() -> None:
    """The API (from the proto's comments), the configuration and the CLI pages match their sources."""
    done = subprocess.run([sys.executable, "scripts/reference.py", "--check"], cwd=ROOT, capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_every_rpc_and_setting_is_in_the_reference() -> None:
    """Each RPC of the service and each field of the server section appear on their pages."""
    from npc_memory.config.server import ServerConfig
    from npc_memory_client.v1 import memory_service_pb2

    api = (ROOT / "docs" / "reference" / "api.md").read_text(encoding="utf-8")
    for method in memory_service_pb2.DESCRIPTOR.services_by_name["MemoryService"].methods:
        assert f"| `{method.name}` |" in api
    configuration = (ROOT / "docs" / "reference" / "configuration.md").read_text(encoding="utf-8")
    for name in ServerConfig.__dataclass_fields__:
        assert f"| `{name}` |" in configuration


def test_every_proto_element_is_commented() -> None:
    """Every message, field, enum, value and RPC of the proto has a comment, so ``grpcurl describe`` explains it."""
    done = subprocess.run([sys.executable, "scripts/reference.py", "--uncommented"], cwd=ROOT, capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stdout
