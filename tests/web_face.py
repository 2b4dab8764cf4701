"""The HTTP face for tests: a live gRPC server with keys and the HTTP port beside it, and a headless chromium.

Imported by the tests in tests/web (its fixtures are pulled in by name). The browser is Debian's chromium, driven
through Debian's chromedriver: nothing downloads a browser.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import grpc
import pytest
import pytest_asyncio
from npc_memory.config import Config
from npc_memory.config.http import HttpConfig
from npc_memory.engine import MemoryEngine
from npc_memory.ops.keys import ApiKey, KeyRing, hash_key
from npc_memory.server import create_server
from npc_memory.server.serve import started
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.remote.webdriver import WebDriver

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
SCREENSHOTS = Path(__file__).resolve().parent.parent / "docs" / "guide" / "img"

READER_KEY = "reader-key-0123456789abcdef"
"""A read key for the players of namespace ``web-a:*``."""
OTHER_KEY = "other-key-0123456789abcdef"
"""A read key for the players of namespace ``web-b:*`` only."""
ADMIN_KEY = "admin-key-0123456789abcdef"
"""An admin key for every player."""
KEYS = KeyRing([
    ApiKey(name="reader", sha256=hash_key(READER_KEY), user_namespaces=("web-a:*",)),
    ApiKey(name="other", sha256=hash_key(OTHER_KEY), user_namespaces=("web-b:*",)),
    ApiKey(name="admin", sha256=hash_key(ADMIN_KEY), admin=True),
])


@dataclass(frozen=True)
class Face:
    """The live ports: gRPC (for storing test data as a game would) and HTTP."""

    grpc_port: int
    http_port: int

    @property
    def base(self) -> str:
        """The HTTP face's base URL."""
        return f"http://127.0.0.1:{self.http_port}"


@pytest_asyncio.fixture(scope="session")
async def face(engine: MemoryEngine, config: Config) -> AsyncIterator[Face]:
    """The service with keys on a free gRPC port and its HTTP face on a free HTTP port, edits allowed."""
    settings = replace(config, http=HttpConfig(port=0, allow_edits=True, cors_origins=("http://game.example",)))
    server, port, _health = await create_server(engine, "127.0.0.1:0", keys=KEYS)
    try:
        async with started(settings, engine, server, KEYS, "127.0.0.1", False) as http_port:
            assert http_port is not None
            yield Face(port, http_port)
    finally:
        await server.stop(0)


@pytest_asyncio.fixture(scope="session")
async def admin_stub(face: Face) -> AsyncIterator[svc_grpc.MemoryServiceAsyncStub]:
    """A gRPC stub whose calls carry the admin key (to store test data)."""
    async with grpc.aio.insecure_channel(f"127.0.0.1:{face.grpc_port}") as channel:
        yield svc_grpc.MemoryServiceStub(channel)


ADMIN = (("authorization", f"Bearer {ADMIN_KEY}"),)
"""Call metadata carrying the admin key."""


def screenshot_folder(tmp: Path) -> Path:
    """Where screenshots go: the guide's images with NPC_MEMORY_SCREENSHOTS=1 (to refresh them), else ``tmp``."""
    return SCREENSHOTS if os.environ.get("NPC_MEMORY_SCREENSHOTS") == "1" else tmp


@pytest.fixture(scope="session")
def browser() -> Iterator[WebDriver]:
    """Headless Debian chromium in a fresh profile, via Debian's chromedriver."""
    if not CHROMIUM.exists() or not CHROMEDRIVER.exists():
        pytest.fail("chromium and chromium-driver are not installed (scripts/setup --dev installs them)")
    profile = tempfile.mkdtemp(prefix="npc-memory-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
                 f"--user-data-dir={profile}", "--window-size=1280,1000", "--lang=ko-KR"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=str(CHROMEDRIVER)))
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
