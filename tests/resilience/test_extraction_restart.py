"""An extraction job survives `kill -9` of a real `npc-memory serve` in the middle of its model call.

The chat model is tests/chat_endpoint.py: a real HTTP server in the test process answering from a script,
because no language model can run here.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import grpc
import pytest
from chat_endpoint import ChatEndpoint, Step, facts_answer, serve_chat
from npc_memory_client.v1 import extraction_pb2 as ex
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc
from own_database import separate_database
from test_extraction import SEED_FACTS, SEED_TURNS

NPC_MEMORY = str(Path(sys.executable).with_name("npc-memory"))
READY = re.compile(rb"npc-memory serving on port (\d+)")
SCOPE = pb.Scope(user_id="kill-9-player", heroine_id="letia")


@pytest.fixture(scope="module")
def own_database(database_url: str) -> Iterator[str]:
    """A database of its own on the test server: no other test's extraction worker may take this job."""
    with separate_database(database_url, "npc_memory_kill9") as url:
        yield url


@pytest.fixture(scope="module")
def chat() -> Iterator[ChatEndpoint]:
    """The scripted chat-completions endpoint for this module."""
    yield from serve_chat()


@asynccontextmanager
async def serve(database_url: str, chat_url: str) -> AsyncIterator[tuple[int, asyncio.subprocess.Process]]:
    """`npc-memory serve` on the test database with extraction on; killed (SIGKILL) on exit if still running."""
    env = {**os.environ, "NPC_MEMORY_DATABASE_URL": database_url, "NPC_MEMORY_EXTRACTION_URL": chat_url,
           "NPC_MEMORY_EXTRACTION_MODEL": "scripted", "NPC_MEMORY_EXTRACTION_TIMEOUT_SECONDS": "3",
           "NPC_MEMORY_EXTRACTION_LEASE_SECONDS": "4", "NPC_MEMORY_EXTRACTION_POLL_SECONDS": "0.2"}
    proc = await asyncio.create_subprocess_exec(
        NPC_MEMORY, "serve", "--port", "0", "--host", "127.0.0.1", stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT, env=env,
    )
    assert proc.stdout is not None
    output = b""
    try:
        async with asyncio.timeout(120):
            while not (match := READY.search(output)):
                line = await proc.stdout.readline()
                if not line:
                    pytest.fail(f"npc-memory exited before serving:\n{output.decode(errors='replace')}")
                output += line
        yield int(match.group(1)), proc
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()


async def _job(stub: svc_grpc.MemoryServiceAsyncStub, job_id: str) -> ex.ExtractionJob:
    return (await stub.GetExtractionJob(ex.GetExtractionJobRequest(user_id=SCOPE.user_id, job_id=job_id))).job


async def _model_called(chat: ChatEndpoint) -> None:
    async with asyncio.timeout(10):
        while True:
            if chat.requests:
                return
            await asyncio.sleep(0.05)


async def _done(stub: svc_grpc.MemoryServiceAsyncStub, job_id: str) -> ex.ExtractionJob:
    async with asyncio.timeout(30):
        while True:
            job = await _job(stub, job_id)
            if job.state == ex.EXTRACTION_JOB_STATE_DONE:
                return job
            await asyncio.sleep(0.1)


async def test_job_killed_mid_call_finishes_after_restart_exactly_once(own_database: str, chat: ChatEndpoint) -> None:
    """A SIGKILL while the model is answering; after a restart the job is taken again and written once."""
    chat.play(Step(delay=20, content="too late"), facts_answer(*SEED_FACTS))
    request = ex.ExtractMemoriesRequest(scope=SCOPE, dialogue=ex.Dialogue(
        dialogue_id="killed", turns=[ex.DialogueTurn(speaker=s, text=t) for s, t in SEED_TURNS]))
    async with serve(own_database, chat.url) as (port, proc), grpc.aio.insecure_channel(f"127.0.0.1:{port}") as ch:
        stub = svc_grpc.MemoryServiceStub(ch)
        job_id = (await stub.ExtractMemories(request)).job.job_id
        await _model_called(chat)  # the worker has taken the job and is waiting for the model
        assert (await _job(stub, job_id)).state == ex.EXTRACTION_JOB_STATE_RUNNING
        proc.send_signal(signal.SIGKILL)
        await proc.wait()
    async with serve(own_database, chat.url) as (port, _proc), grpc.aio.insecure_channel(f"127.0.0.1:{port}") as ch:
        stub = svc_grpc.MemoryServiceStub(ch)
        job = await _done(stub, job_id)
        assert job.attempts == 2
        assert len(job.memories) == 4
        again = (await stub.ExtractMemories(request)).job
        await asyncio.sleep(1.0)  # several worker polls: a finished job is never taken again
        assert again.job_id == job_id
        assert len(chat.requests) == 2
        listed = await stub.ListMemories(svc.ListMemoriesRequest(scope=SCOPE))
        assert sorted(m.content for m in listed.memories) == sorted(str(f["content"]) for f in SEED_FACTS)
