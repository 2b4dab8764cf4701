"""Big batches are tokenised in worker processes, with exactly the terms and signatures of the server's own Kiwi."""

from __future__ import annotations

import uuid

import numpy as np
from npc_memory.config import load_config
from npc_memory.domain.model import ContentType, NewMemory, Scope, Speaker, Subject
from npc_memory.engine import MemoryEngine
from npc_memory.text import TextOptions, Tokenizer
from npc_memory.text.process_pool import AnalysisPool

from benchmarks.stall import long_fact

TEXTS = ["서울에 살고 싶어한다", "가끔 매운 음식을 먹는다", "I traveled to Busan with 3 cats.", "", long_fact(1, "p")]


async def test_workers_analyse_as_the_server_does() -> None:
    """Two workers over mixed Korean and English give the in-process Tokenizer's analyses, in order."""
    options = TextOptions(latin_words=True, stem_latin=True)
    pool = await AnalysisPool.start(2, options, min_chars=0)
    try:
        got = await pool.analyse(TEXTS)
        assert await pool.analyse([]) == []
    finally:
        pool.shutdown()
    local = Tokenizer(options=options)
    assert got == [local.analyse(t) for t in TEXTS]


async def test_a_big_batch_goes_to_the_workers_and_stores_the_same_terms(engine: MemoryEngine) -> None:
    """The session engine has a pool (serve's default); a batch over its threshold is stored with Kiwi's terms."""
    pool = engine.analysis_pool
    assert pool is not None
    texts = [long_fact(i, "pp") for i in range(4)]
    assert pool.wants(texts)
    assert not pool.wants(["짧은 사실"])
    scope = Scope(user_id=f"pool-{uuid.uuid4().hex[:8]}", heroine_id="letia")
    vector = np.zeros(engine.embedder.dim, dtype=np.float32)
    vector[0] = 1.0
    results = await engine.store(scope, [NewMemory(Speaker.USER, Subject.USER, "user", ContentType.EVENT, t,
                                                   importance=5, embedding=vector) for t in texts])
    async with engine.db.connection() as conn:
        cur = await conn.execute("SELECT id, terms, meaning FROM user_memories WHERE user_id = %s", [scope.user_id])
        rows = {r["id"]: (tuple(r["terms"]), tuple(r["meaning"])) for r in await cur.fetchall()}
    await engine.forget_player(scope.user_id)
    expected = [engine.tokenizer.analyse(t) for t in texts]
    assert [rows[r.memory_id] for r in results] == [(a.terms, a.meaning) for a in expected]


def test_tokenize_processes_are_configured() -> None:
    """NPC_MEMORY_TOKENIZE_PROCESSES and the threshold reach the write settings; the default is one process."""
    assert load_config({}, {}).write.tokenize_processes == 1
    config = load_config({}, {"NPC_MEMORY_TOKENIZE_PROCESSES": "0", "NPC_MEMORY_TOKENIZE_PROCESS_MIN_CHARS": "9"})
    assert (config.write.tokenize_processes, config.write.tokenize_process_min_chars) == (0, 9)
