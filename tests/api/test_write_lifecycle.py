"""UpdateMemory in place and as a new version, `npc-memory reembed`, ForgetPlayer erasure, retention (forgetting)."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import psycopg
import pytest
from google.protobuf import field_mask_pb2
from npc_memory.cli import main
from npc_memory.domain.model import Scope
from npc_memory.domain.retention import RetentionPolicies, RetentionPolicy
from npc_memory.engine import MemoryEngine
from npc_memory.errors import ConfigError
from npc_memory.server.background import maintain_every
from npc_memory.store.settings import check_embedding_model, set_embedding_model
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc

if TYPE_CHECKING:
    from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc

    Stub = svc_grpc.MemoryServiceAsyncStub


def _scope(scope: Scope) -> pb.Scope:
    return pb.Scope(user_id=scope.user_id, heroine_id=scope.heroine_id)


def _fact(content: str, **kw: Any) -> pb.MemoryInput:
    return pb.MemoryInput(speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, content=content, **kw)


async def _store(stub: Stub, scope: Scope, *facts: pb.MemoryInput, request_id: str = "") -> list[str]:
    response = await stub.StoreMemories(svc.StoreMemoriesRequest(scope=_scope(scope), memories=list(facts),
                                                                 request_id=request_id))
    return [r.memory_id for r in response.results]


async def _all(stub: Stub, scope: Scope) -> list[pb.Memory]:
    listed = await stub.ListMemories(svc.ListMemoriesRequest(scope=_scope(scope), include_invalidated=True))
    return list(listed.memories)


async def _vector(database_url: str, memory_id: str) -> np.ndarray:
    async with await psycopg.AsyncConnection.connect(database_url) as conn:
        cur = await conn.execute("SELECT embedding::text FROM user_memories WHERE id = %(id)s", {"id": memory_id})
        row = await cur.fetchone()
    assert row is not None
    return np.asarray([float(x) for x in row[0].strip("[]").split(",")], dtype=np.float32)


async def test_importance_tier_and_metadata_change_in_place(stub: Stub, scope: Scope) -> None:
    """Same row, updated_at moves, created_at and valid_at stay, no new version."""
    (memory_id,) = await _store(stub, scope, _fact("레티아는 비 오는 날을 좋아함", importance=4))
    before = (await _all(stub, scope))[0]
    request = svc.UpdateMemoryRequest(scope=_scope(scope), memory_id=memory_id, importance=9, tier=pb.TIER_GIST,
                                      update_mask=field_mask_pb2.FieldMask(paths=["importance", "tier", "metadata"]))
    request.metadata.update({"source": "chapter-2"})
    after = (await stub.UpdateMemory(request)).memory
    assert after.memory_id == memory_id
    assert (after.importance, after.tier, dict(after.metadata)) == (9, pb.TIER_GIST, {"source": "chapter-2"})
    assert after.updated_at.ToDatetime() > before.updated_at.ToDatetime()
    assert (after.created_at, after.valid_at) == (before.created_at, before.valid_at)
    assert len(await _all(stub, scope)) == 1


async def test_content_change_versions_the_fact_and_re_embeds(
    stub: Stub, scope: Scope, engine: MemoryEngine, database_url: str
) -> None:
    """A new content closes the row (superseded), opens a new one with the slot and a vector of the new text."""
    (old_id,) = await _store(stub, scope, _fact("초밥을 좋아함", slot="favorite_food", importance=6))
    new = (await stub.UpdateMemory(svc.UpdateMemoryRequest(
        scope=_scope(scope), memory_id=old_id, content="마라탕을 좋아함",
        update_mask=field_mask_pb2.FieldMask(paths=["content"]),
    ))).memory
    assert new.memory_id != old_id
    assert (new.content, new.slot, new.importance) == ("마라탕을 좋아함", "favorite_food", 6)
    chain = await stub.GetMemoryHistory(svc.GetMemoryHistoryRequest(scope=_scope(scope), memory_id=new.memory_id))
    old, current = chain.memories
    assert (old.memory_id, current.memory_id) == (old_id, new.memory_id)
    assert (old.close_reason, old.superseded_by, old.invalid_at) == (
        pb.CLOSE_REASON_SUPERSEDED, new.memory_id, new.valid_at)
    (expected,) = await engine.embedder.embed_passages(["마라탕을 좋아함"])
    stored = await _vector(database_url, new.memory_id)
    assert float(np.dot(stored, expected)) > 0.999
    assert float(np.dot(await _vector(database_url, old_id), expected)) < 0.99


async def test_reembed_command_rewrites_vectors_and_records_the_model(
    stub: Stub, scope: Scope, engine: MemoryEngine, database_url: str
) -> None:
    """After a model change start-up refuses; `npc-memory reembed` fixes every row and the model record."""
    (memory_id,) = await _store(stub, scope, _fact("등산을 좋아함"))
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        await conn.execute(
            "UPDATE user_memories SET embedding = %(v)s::vector, embedding_model = 'old-model' WHERE id = %(id)s",
            {"v": str([1.0] + [0.0] * (engine.embedder.dim - 1)), "id": memory_id},
        )
    await set_embedding_model(engine.db, "old-model", engine.embedder.dim)
    with pytest.raises(ConfigError, match="reembed"):
        await check_embedding_model(engine.db, engine.embedder.name, engine.embedder.dim)
    code = await asyncio.to_thread(main, ["reembed", "--database-url", database_url, "--batch-size", "50"])
    assert code == 0
    await check_embedding_model(engine.db, engine.embedder.name, engine.embedder.dim)
    (expected,) = await engine.embedder.embed_passages(["등산을 좋아함"])
    assert float(np.dot(await _vector(database_url, memory_id), expected)) > 0.999
    assert (await _all(stub, scope))[0].embedding_model == engine.embedder.name


async def test_forget_player_leaves_nothing_of_them_in_any_table(stub: Stub, database_url: str) -> None:
    """Rows, history and idempotency records of a player across heroines are gone from every table; others stay."""
    secret, kept = f"비밀마커{uuid.uuid4().hex[:8]}", f"남의기억{uuid.uuid4().hex[:8]}"
    player, other = f"forget-{uuid.uuid4().hex[:8]}", f"keep-{uuid.uuid4().hex[:8]}"
    for heroine in ("letia", "roco", "lupames"):
        scope = Scope(player, heroine)
        await _store(stub, scope, _fact(f"{secret} 고양이", slot="pet"), request_id="r1")
        await _store(stub, scope, _fact(f"{secret} 강아지", slot="pet"), request_id="r2")
        (diary,) = await _store(stub, scope, _fact(f"{secret} 일기"))
        await stub.InvalidateMemory(svc.InvalidateMemoryRequest(scope=_scope(scope), memory_id=diary))
    await _store(stub, Scope(other, "letia"), _fact(f"{kept} 고양이"), request_id="r1")
    assert set(await _scan(database_url, [player, secret])) == {player, secret}  # the scan sees them before
    response = await stub.ForgetPlayer(svc.ForgetPlayerRequest(user_id=player))
    assert response.deleted_memories == 9
    found = await _scan(database_url, [player, secret, other, kept])
    assert player not in found
    assert secret not in found
    assert found[other] == {"user_memories", "store_requests", "scope_versions"}  # their scope's counter (0013)
    assert found[kept] == {"user_memories"}


async def _scan(database_url: str, needles: list[str]) -> dict[str, set[str]]:
    """Which needles occur in the text form of any row of any table outside the catalogs, and in which tables."""
    hits: dict[str, set[str]] = {}
    async with await psycopg.AsyncConnection.connect(database_url) as conn:
        cur = await conn.execute(
            "SELECT table_schema, table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE'"
            " AND table_schema NOT IN ('pg_catalog', 'information_schema')"
        )
        tables = await cur.fetchall()
        assert ("public", "store_requests") in tables
        for schema, table in tables:
            query = psycopg.sql.SQL("SELECT t::text FROM {}.{} t").format(
                psycopg.sql.Identifier(schema), psycopg.sql.Identifier(table))
            for (text,) in await (await conn.execute(query)).fetchall():
                for needle in needles:
                    if needle in text:
                        hits.setdefault(needle, set()).add(table)
    return hits


async def test_retention_retires_the_least_important_oldest_and_shows_them_in_history(
    stub: Stub, tmp_path: Path, database_url: str
) -> None:
    """`npc-memory retain` keeps N per scope for its heroine, retires low/old first, spares the floor."""
    heroine = f"h{uuid.uuid4().hex[:10]}"
    scope = Scope(f"retain-{uuid.uuid4().hex[:8]}", heroine)
    contents = {"사과를 좋아함": 2, "배를 좋아함": 2, "포도를 좋아함": 5, "생일은 겨울": 9, "수박을 좋아함": 3,
                "이름은 민수": 8}
    for content, importance in contents.items():
        await _store(stub, scope, _fact(content, importance=importance))
    config = tmp_path / "npc-memory.toml"
    config.write_text(f"[retention]\nmax_valid = 0\n[retention.heroines.{heroine}]\nmax_valid = 3\n"
                      "importance_floor = 8\n", encoding="utf-8")
    code = await asyncio.to_thread(main, ["retain", "--database-url", database_url, "--config", str(config)])
    assert code == 0
    memories = await _all(stub, scope)
    valid = {m.content for m in memories if not m.HasField("invalid_at")}
    retired = {m.content for m in memories if m.close_reason == pb.CLOSE_REASON_RETIRED}
    assert valid == {"포도를 좋아함", "생일은 겨울", "이름은 민수"}
    assert retired == {"사과를 좋아함", "배를 좋아함", "수박을 좋아함"}
    history = await stub.GetMemoryHistory(svc.GetMemoryHistoryRequest(scope=_scope(scope), subject_id="user"))
    assert len(history.memories) == 6


async def test_retention_never_retires_at_or_above_the_floor(stub: Stub, tmp_path: Path, database_url: str) -> None:
    """A scope over its limit with only important memories keeps them all."""
    heroine = f"h{uuid.uuid4().hex[:10]}"
    scope = Scope(f"retain-{uuid.uuid4().hex[:8]}", heroine)
    for content in ("첫 키스를 함", "약혼함", "목숨을 구해줌"):
        await _store(stub, scope, _fact(content, importance=9))
    config = tmp_path / "npc-memory.toml"
    config.write_text(f"[retention]\nmax_valid = 0\n[retention.heroines.{heroine}]\nmax_valid = 1\n",
                      encoding="utf-8")
    assert await asyncio.to_thread(main, ["retain", "--database-url", database_url, "--config", str(config)]) == 0
    assert all(not m.HasField("invalid_at") for m in await _all(stub, scope))


async def test_serve_schedule_applies_retention_on_its_interval(stub: Stub, engine: MemoryEngine) -> None:
    """The schedule `serve` runs with retention.interval_minutes retires memories over the limit by itself."""
    heroine = f"h{uuid.uuid4().hex[:10]}"
    scope = Scope(f"retain-{uuid.uuid4().hex[:8]}", heroine)
    for content, importance in {"사과를 좋아함": 2, "배를 좋아함": 3, "생일은 겨울": 9}.items():
        await _store(stub, scope, _fact(content, importance=importance))
    policies = RetentionPolicies(RetentionPolicy(max_valid=0), {heroine: RetentionPolicy(max_valid=1)})
    schedule = asyncio.create_task(maintain_every(engine.db, 0.001, policies, 24.0))  # every 0.06 s
    try:
        for _ in range(200):  # up to 10 s on a loaded machine
            valid = [m for m in await _all(stub, scope) if not m.HasField("invalid_at")]
            if len(valid) <= 1:
                break
            await asyncio.sleep(0.05)
    finally:
        schedule.cancel()
    assert [m.content for m in valid] == ["생일은 겨울"]
