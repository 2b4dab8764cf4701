"""``npc-memory reembed`` re-makes vectors under the write path's rules (store/reembed.py).

A stated dialogue's turns take the mean of their views' vectors, facts are embedded alone. In a database of its
own: a re-embed rewrites every row of the database.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime

import numpy as np
from npc_memory.config import Config, DatabaseConfig
from npc_memory.domain.dialogue import Line
from npc_memory.domain.model import ContentType, NewMemory, Scope, Speaker, Subject, Vector
from npc_memory.engine import MemoryEngine
from npc_memory.engine.dialogue import StatedDialogue, store_dialogue
from npc_memory.server.runtime import open_engine
from npc_memory.store.reembed import reembed_all
from own_database import separate_database

SAID = datetime(2026, 6, 1, 20, 0, tzinfo=UTC)
TALK = (Line(Speaker.HEROINE, "어제 뭐 했어?", "레티아", SAID), Line(Speaker.USER, "친구랑 영화 봤어", "", SAID),
        Line(Speaker.HEROINE, "무슨 영화?", "레티아", SAID), Line(Speaker.USER, "공포 영화! 무서웠어", "", SAID))


async def _vectors(engine: MemoryEngine, scope: Scope) -> dict[uuid.UUID, Vector]:
    async with engine.db.connection() as conn:
        cur = await conn.execute("SELECT id, embedding FROM user_memories WHERE user_id = %(u)s", {"u": scope.user_id})
        return {r["id"]: np.asarray(r["embedding"].to_numpy(), dtype=np.float32) for r in await cur.fetchall()}


async def test_reembed_gives_turns_their_context_vectors_and_facts_their_own(config: Config, scope: Scope) -> None:
    """Vectors scrambled, then re-embedded: every turn and fact gets the vector the write path gave it."""
    assert config.database.url is not None
    with separate_database(config.database.url, "reembed") as url:
        async with open_engine(replace(config, database=DatabaseConfig(url=url, pool_min=1, pool_max=2))) as engine:
            await _scrambled_and_reembedded(engine, scope)


async def _scrambled_and_reembedded(engine: MemoryEngine, scope: Scope) -> None:
    # Streamed in two requests: the question at the end of the first takes its answer when the second arrives.
    await store_dialogue(engine, scope, StatedDialogue("movie", 0, TALK[:3]))
    await store_dialogue(engine, scope, StatedDialogue("movie", 3, TALK[3:]))
    await engine.store(scope, [NewMemory(Speaker.USER, Subject.USER, "user", ContentType.PREFERENCE,
                                         "공포 영화를 좋아함", valid_at=SAID)])
    written = await _vectors(engine, scope)
    assert len(written) == 5
    async with engine.db.transaction() as conn:
        await conn.execute("UPDATE user_memories SET embedding = %(v)s WHERE user_id = %(u)s",
                           {"v": np.ones(engine.embedder.dim, dtype=np.float32) / np.sqrt(engine.embedder.dim),
                            "u": scope.user_id})
    await reembed_all(engine.db, engine.embedder, 3, lambda _: None)
    again = await _vectors(engine, scope)
    for memory_id, vector in written.items():
        cosine = float(np.dot(vector, again[memory_id]) / (np.linalg.norm(vector) * np.linalg.norm(again[memory_id])))
        assert cosine > 0.999, memory_id
        assert abs(float(np.linalg.norm(vector) - np.linalg.norm(again[memory_id]))) < 1e-3, memory_id
