"""A write whose database session ends mid-transaction answers UNAVAILABLE with our words, never INTERNAL.

During an outage PostgreSQL ends every session wherever it is. Two ways of landing the cut where wanted:
- a trigger on this test's own marked content sleeps (in the INSERT, or at COMMIT as a deferred constraint
  trigger) and another session terminates the writer's backend while it sleeps;
- a proxy (tests/pg_cut.py) ends the session where PostgreSQL would have said it is ready for the next query
  after the COMMIT, or in place of the answer of the transaction's first statement. That answer in place of a
  sync point's once reached the error mapping as a driver error it did not know (psycopg.InternalError: INTERNAL).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace

import grpc
import psycopg
import pytest
import pytest_asyncio
from npc_memory.config.database import PoolSettings
from npc_memory.domain.model import Scope
from npc_memory.engine import MemoryEngine
from npc_memory.server import create_server
from npc_memory.store.pool import Database
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc
from pg_cut import Cut, CutProxy

MARK = "cut-write-probe"
STALL = f"""
CREATE OR REPLACE FUNCTION cut_write_stall() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_sleep(30);
    RETURN NEW;
END $$;
DROP TRIGGER IF EXISTS cut_write_at_commit ON user_memories;
DROP TRIGGER IF EXISTS cut_write_at_insert ON user_memories;
CREATE CONSTRAINT TRIGGER cut_write_at_commit AFTER INSERT ON user_memories DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW WHEN (NEW.content LIKE '%{MARK}-commit%') EXECUTE FUNCTION cut_write_stall();
CREATE TRIGGER cut_write_at_insert BEFORE INSERT ON user_memories
    FOR EACH ROW WHEN (NEW.content LIKE '%{MARK}-insert%') EXECUTE FUNCTION cut_write_stall();
"""
UNSTALL = """
DROP TRIGGER IF EXISTS cut_write_at_commit ON user_memories;
DROP TRIGGER IF EXISTS cut_write_at_insert ON user_memories;
DROP FUNCTION IF EXISTS cut_write_stall();
"""
SLEEPING = "SELECT pid FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND query NOT LIKE '%pg_stat_activity%'"


@pytest_asyncio.fixture
async def stalls(database_url: str) -> AsyncIterator[None]:
    """The sleeping triggers on marked content, dropped afterwards."""
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        await conn.execute(STALL)
    try:
        yield
    finally:
        async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
            await conn.execute(UNSTALL)


async def _cut_the_sleeper(database_url: str) -> int:
    """Wait for a backend sleeping in the trigger and terminate it; its pid."""
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        for _ in range(400):
            row = await (await conn.execute(SLEEPING)).fetchone()
            if row is not None:
                await conn.execute("SELECT pg_terminate_backend(%s)", (row[0],))
                return int(row[0])
            await asyncio.sleep(0.025)
    raise AssertionError("no write reached the sleeping trigger")


@pytest.mark.usefixtures("stalls")
@pytest.mark.parametrize("where", ["commit", "insert"])
async def test_a_write_cut_mid_transaction_answers_unavailable(
    stub: svc_grpc.MemoryServiceAsyncStub, scope: Scope, database_url: str, where: str,
) -> None:
    """The writer's session is terminated while it commits (or inserts): UNAVAILABLE with our words, then it works."""
    wire = pb.Scope(user_id=scope.user_id, heroine_id=scope.heroine_id)
    request = svc.StoreMemoriesRequest(scope=wire, request_id=uuid.uuid4().hex, memories=[pb.MemoryInput(
        speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, content=f"고양이를 키운다 {MARK}-{where}")])
    store = asyncio.ensure_future(stub.StoreMemories(request, timeout=60))
    await _cut_the_sleeper(database_url)
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await store
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE, err.value.details()
    assert err.value.details() == "the database is unavailable; the server log has the details"
    after = await stub.StoreMemories(svc.StoreMemoriesRequest(scope=wire, memories=[pb.MemoryInput(
        speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, content="비 오는 날을 좋아한다")]))
    assert len(after.results) == 1



@pytest.mark.parametrize("after_commit", [True, False], ids=["after-commit", "mid-transaction"])
async def test_a_write_whose_session_ends_at_a_sync_point_answers_unavailable(
    engine: MemoryEngine, database_url: str, scope: Scope, after_commit: bool,
) -> None:
    """The session ends after the COMMIT or inside the transaction: UNAVAILABLE, ours; the next write works."""
    async with CutProxy(database_url).running() as proxy:
        db = Database(proxy.url, PoolSettings(min_size=1, max_size=1, connect_timeout=5.0))
        await db.open()
        cut_engine = replace(engine, db=db, scope_cache=None)
        server, port, _ = await create_server(cut_engine, "127.0.0.1:0")
        await server.start()
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                stub = svc_grpc.MemoryServiceStub(channel)
                wire = pb.Scope(user_id=scope.user_id, heroine_id=scope.heroine_id)
                proxy.cut = cut = Cut(after_commit=after_commit)
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    await stub.StoreMemories(svc.StoreMemoriesRequest(scope=wire, memories=[pb.MemoryInput(
                        speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, content="고양이를 키운다")]), timeout=30)
                assert cut.done.is_set(), "the write never reached the chosen moment"
                assert err.value.code() == grpc.StatusCode.UNAVAILABLE, err.value.details()
                assert err.value.details() == "the database is unavailable; the server log has the details"
                after = await stub.StoreMemories(svc.StoreMemoriesRequest(scope=wire, memories=[pb.MemoryInput(
                    speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, content="비 오는 날을 좋아한다")]), timeout=30)
                assert len(after.results) == 1
        finally:
            await server.stop(0)
            await db.close()
