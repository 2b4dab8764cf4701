"""The duplicate rule's read looks the batch's keys up; it does not read the scope (on the pool's generic plan).

Joined on its keys alone, the read's generic plan (estimating a handful of scope rows) hashed every row of the
scope for both of its joins: 5 ms of a single store at 2,000 rows, growing with the scope. These tests run the
read as the write path does (compiled, prepared, binary, generic plan) under auto_explain, whose plan the server
sends to this session, and fail on that form; they also check that both joins still find what they should, terms
compared exactly (a term holding a space is not two terms).
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta

import numpy as np
import psycopg
from npc_memory.domain.model import (
    ContentType,
    NewMemory,
    PreparedMemory,
    Scope,
    Speaker,
    StoreOutcome,
    Subject,
    Tier,
    Vector,
)
from npc_memory.domain.write_rules import content_key
from npc_memory.embedding.base import normalise
from npc_memory.engine import MemoryEngine
from npc_memory.store.compiled import compile_statement
from npc_memory.store.writes import DUPLICATE_CANDIDATES, duplicate_params
from pgvector.psycopg import register_vector

ROWS = 300
SCANNED = re.compile(r"on user_memories \w+ .*actual time=\S+ rows=(\d+)")
REMOVED = re.compile(r"Rows Removed by Filter: (\d+)")


def _probe(content: str, terms: list[str], meaning: list[str], vector: Vector) -> PreparedMemory:
    fact = NewMemory(Speaker.USER, Subject.USER, "user", ContentType.FACT, content)
    return PreparedMemory(uuid.uuid4(), fact, datetime.now(UTC), tuple(terms), content_key(content), tuple(meaning),
                          embedding=vector, embedding_model="test")


def _read(database_url: str, scope: Scope, items: list[PreparedMemory]) -> tuple[list[tuple[int, uuid.UUID]], str]:
    """The read's (batch index, row id) pairs and its plan, run as the write path runs it on a generic plan."""
    statement = compile_statement(DUPLICATE_CANDIDATES)
    plans: list[str] = []
    with psycopg.connect(database_url, autocommit=True) as conn:
        register_vector(conn)
        conn.add_notice_handler(lambda d: plans.append(d.message_primary or ""))
        for setting in ("plan_cache_mode = force_generic_plan", "client_min_messages = log",
                        "auto_explain.log_min_duration = 0", "auto_explain.log_analyze = on"):
            conn.execute(f"SET {setting}")
        conn.execute("LOAD 'auto_explain'")
        with psycopg.RawCursor(conn) as cur:
            cur.execute(statement.query, statement.args(duplicate_params(scope, items)), prepare=True,
                        binary=True)
            found = [(int(r[0]), r[1]) for r in cur.fetchall()]
    return found, "\n".join(plans)


async def _stored_scope(engine: MemoryEngine, scope: Scope) -> tuple[list[uuid.UUID], list[PreparedMemory]]:
    """ROWS memories in the scope, analysed; two probes of the eighth: its text again, and its terms again."""
    rng = np.random.default_rng(12)
    facts = [NewMemory(Speaker.USER, Subject.USER, "user", ContentType.FACT, f"{i}번째 날에 공원에서 고양이를 봤음",
                       embedding=v) for i, v in enumerate(normalise(rng.standard_normal((ROWS, 384))))]
    ids = [r.memory_id for r in await engine.store(scope, facts)]
    async with engine.db.connection() as conn:
        await conn.execute("ANALYZE user_memories")
        cur = await conn.execute("SELECT content, terms, meaning FROM user_memories WHERE id = %s", (ids[7],))
        row = await cur.fetchone()
    assert row is not None
    content, terms, meaning, vector = row["content"], row["terms"], row["meaning"], facts[7].embedding
    assert vector is not None
    same_text = _probe(content, terms, meaning, vector)
    same_terms = _probe(content + "!!", terms, meaning, vector)  # punctuation: a new key, same terms
    return ids, [same_text, same_terms]


def _removed_from_memories(plan: str) -> list[int]:
    """The rows each scan of user_memories dropped by a filter.

    Other tables' scans are not counted: the player_state probe of the shared test database reads every player the
    session's tests saved.
    """
    removed: list[int] = []
    node = ""
    for line in plan.splitlines():
        if "->" in line or "Scan" in line:
            node = line
        elif (m := REMOVED.search(line)) and "on user_memories" in node:
            removed.append(int(m.group(1)))
    return removed


def _assert_looked_up(found: list[tuple[int, uuid.UUID]], plan: str, row_id: uuid.UUID) -> None:
    assert (0, row_id) in found, found
    assert (1, row_id) in found, found
    scanned = [int(m.group(1)) for m in SCANNED.finditer(plan)]
    assert scanned, plan
    assert max(scanned) <= 5, plan  # the old form read all ROWS rows of the scope twice
    assert max(_removed_from_memories(plan), default=0) <= 5, plan


async def test_the_duplicate_read_looks_keys_up(engine: MemoryEngine, database_url: str, scope: Scope) -> None:
    """A repeated text and a same-terms text are found, and no scan reads more than a few of the scope's rows."""
    ids, probes = await _stored_scope(engine, scope)
    found, plan = _read(database_url, scope, probes)
    _assert_looked_up(found, plan, ids[7])


async def test_a_saved_players_duplicate_read_looks_keys_up(engine: MemoryEngine, database_url: str,
                                                            scope: Scope) -> None:
    """Through the timeline view's branches (the player saved and loaded) the keys are looked up as well."""
    ids, probes = await _stored_scope(engine, scope)
    await engine.create_save_point(scope.user_id, "slot-1")
    await engine.load_save_point(scope.user_id, "slot-1")
    async with engine.db.connection() as conn:  # a state row: the view's branches answer, not the plain one
        cur = await conn.execute("SELECT count(*) AS n FROM player_state WHERE user_id = %s", (scope.user_id,))
        assert (await cur.fetchone() or {}).get("n") == 1
    found, plan = _read(database_url, scope, probes)
    _assert_looked_up(found, plan, ids[7])


async def test_terms_are_compared_whole(engine: MemoryEngine, database_url: str, scope: Scope) -> None:
    """A stored term holding a space matches only that term, not the two words it would split into."""
    rng = np.random.default_rng(13)
    vector = normalise(rng.standard_normal((1, 384)))[0]
    (stored,) = await engine.store(scope, [NewMemory(Speaker.USER, Subject.USER, "user", ContentType.FACT,
                                                     "뉴욕 여행", embedding=vector)])
    async with engine.db.connection() as conn:
        await conn.execute("UPDATE user_memories SET terms = %s, meaning = '{}' WHERE id = %s",
                           (["new york", "여행"], stored.memory_id))
    whole = _probe("new york 여행", ["new york", "여행"], [], vector)
    split = _probe("new-york 여행", ["new", "york", "여행"], [], vector)
    found, _ = _read(database_url, scope, [whole, split])
    assert found == [(0, stored.memory_id)], found


async def test_a_turn_reads_only_its_own_text_at_its_own_moment(engine: MemoryEngine, database_url: str,
                                                                scope: Scope) -> None:
    """A line said every day is kept every day; its next store reads only a resend (the same moment), not them all.

    Every earlier "좋아해" came back to each new store's planner, which could only drop them (a turn repeats only
    itself within SAME_TURN): 300 of them made a store 7.3 ms instead of 3.0. A knowledge fact of the same text
    still reads every one (it is a duplicate of any), and the resend is still caught by the whole store.
    """
    rng = np.random.default_rng(14)
    vectors = normalise(rng.standard_normal((40, 384)))
    t0 = datetime(2026, 3, 1, 12, tzinfo=UTC)

    def said(at: datetime, vector: Vector, tier: Tier = Tier.SOURCE) -> NewMemory:
        return NewMemory(Speaker.USER, Subject.USER, "user", ContentType.FACT, "좋아해", tier=tier, valid_at=at,
                         embedding=vector)

    days = [await engine.store(scope, [said(t0 + timedelta(days=d), vectors[d])]) for d in range(30)]
    assert all(r.outcome is StoreOutcome.CREATED for (r,) in days)
    last = t0 + timedelta(days=29)
    analysed = engine.tokenizer.analyse("좋아해")

    def probe(at: datetime, tier: Tier) -> PreparedMemory:
        fact = said(at, vectors[35], tier)
        return PreparedMemory(uuid.uuid4(), fact, at, analysed.terms, content_key("좋아해"), analysed.meaning,
                              embedding=vectors[35], embedding_model="test")

    tomorrow, resent = probe(last + timedelta(days=1), Tier.SOURCE), probe(last + timedelta(seconds=20), Tier.SOURCE)
    known = probe(last + timedelta(days=1), Tier.KNOWLEDGE)
    found, _ = _read(database_url, scope, [tomorrow, resent, known])
    assert [i for i, _ in found].count(0) == 0, found
    assert [row for i, row in found if i == 1] == [days[-1][0].memory_id], found
    assert sorted(row for i, row in found if i == 2) == sorted(r.memory_id for (r,) in days), found
    (again,) = await engine.store(scope, [said(last + timedelta(seconds=20), vectors[36])])
    assert (again.outcome, again.memory_id) == (StoreOutcome.DUPLICATE, days[-1][0].memory_id)
    (next_day,) = await engine.store(scope, [said(last + timedelta(days=1), vectors[37])])
    assert next_day.outcome is StoreOutcome.CREATED
