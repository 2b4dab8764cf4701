"""The event loop's own work goes beside a read it waits for, not before it is sent (engine/memory.py).

A lone line's store reads the scope's previous turn before its model (store/dialogue.py): its Kiwi analysis runs
while that read is in the database (engine/write.py ``EarlyAnalyses``). Observed on the real engine and database:
the tokenizer used is the engine's own, wrapped to note at each call whether the connection the read takes (the
pool's kept one, store/pool.py) has a statement in flight.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any, cast

import psycopg
import pytest
import pytest_asyncio
from npc_memory.domain.model import ContentType, NewMemory, Scope, Speaker, Subject, Tier
from npc_memory.engine import MemoryEngine
from npc_memory.text import Tokenizer
from npc_memory.text.tokenize import Analysis
from psycopg import pq
from test_scope_cache import T0


@dataclass
class Watching:
    """The engine's tokenizer, noting for each text it analyses whether a kept-connection statement is in flight."""

    inner: Tokenizer
    engine: MemoryEngine | None = None
    seen: dict[str, bool] = field(default_factory=dict)

    def _in_flight(self) -> bool:
        assert self.engine is not None
        kept = self.engine.db._kept  # the connection read_direct and the syncs take first
        return kept is not None and kept.pgconn.transaction_status == pq.TransactionStatus.ACTIVE

    def analyse(self, text: str) -> Analysis:
        """The real analysis, noted."""
        self.seen[text] = self._in_flight()
        return self.inner.analyse(text)

    def query_terms(self, text: str) -> list[str]:
        """The real query terms, noted."""
        self.seen[text] = self._in_flight()
        return self.inner.query_terms(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest_asyncio.fixture
async def watched(engine: MemoryEngine) -> AsyncIterator[tuple[MemoryEngine, Watching]]:
    """The session's engine with a watched tokenizer."""
    watching = Watching(engine.tokenizer)
    eng = replace(engine, tokenizer=cast(Tokenizer, watching))
    watching.engine = eng
    yield eng, watching


@pytest.mark.parametrize("tier", [Tier.SOURCE, Tier.KNOWLEDGE])
async def test_a_lone_lines_analysis_runs_while_its_dialogue_read_is_in_the_database(
    watched: tuple[MemoryEngine, Watching], scope: Scope, tier: Tier,
) -> None:
    """The read of the previous turn is sent, then the line is analysed; the stored terms are the line's own.

    A source line reads its turn's context (``turn_texts``); an unnamed one whether it continues a dialogue.
    """
    engine, watching = watched
    at = T0 + timedelta(days=3)
    said = [NewMemory(speaker, subject, subject.value, ContentType.FACT, text, tier=tier,
                      valid_at=at + timedelta(seconds=20 * i))
            for i, (speaker, subject, text) in enumerate([(Speaker.USER, Subject.USER, "오늘 바다에 갔었어"),
                                                           (Speaker.HEROINE, Subject.HEROINE, "파도 소리가 좋았지")])]
    await engine.store(scope, said[:1])
    (result,) = await engine.store(scope, said[1:])
    assert watching.seen[said[1].content] is True
    async with await psycopg.AsyncConnection.connect(engine.db.url) as conn:
        cur = await conn.execute("SELECT content, terms FROM user_memories WHERE id = %s", (result.memory_id,))
        row = await cur.fetchone()
    assert row is not None
    assert row == (said[1].content, list(watching.inner.analyse(said[1].content).terms))
