"""The write transaction: duplicates, slot supersession, explicit supersedes, insert — all or nothing.

A batch costs two round trips whatever its size (pipeline mode): take the scope's lock and read what can
matter (duplicate candidates, slot timelines, explicit targets), plan in memory (domain/write_plan.py), then
send every insert, close and importance raise with the COMMIT.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg import sql
from psycopg.types.json import Jsonb

from npc_memory.domain.links import Link, batch_links, referenced_ids
from npc_memory.domain.model import AnalysedFact, PreparedMemory, Scope, StoreResult, Tier
from npc_memory.domain.write_plan import (
    DupCandidate,
    SlotKey,
    Target,
    WritePlan,
    insert_order,
    place_of,
    plan_batch,
    repeats_only_itself,
    slot_key,
)
from npc_memory.domain.write_rules import SAME_TURN, FactText, SlotRow
from npc_memory.ops.tracing import span
from npc_memory.store import changes, idempotency
from npc_memory.store.compiled import compile_statement
from npc_memory.store.link_writes import CARRY_LINKS, INSERT_LINK, carry_params, link_params
from npc_memory.store.pipelined import Pipeline, Reply, pipelined_transaction
from npc_memory.store.pool import Database
from npc_memory.store.view import PICKED, ROOT_TIMELINE, view_params, with_view

# For each fact of the batch, the valid rows of the same subject with the same normalised text, or with the
# same terms and meaning signature and a cosine at or above the threshold (domain/write_rules.is_duplicate makes
# the final call; a row without a signature only matches its own text). Comparing terms in SQL first matters:
# Korean facts of one pattern ("X를 좋아함") sit at cosine 0.93-0.97, so cosine alone would return most of the
# scope. Two probes, not one with OR, each an equality on a key with an index: md5(content_key), and the terms'
# hash (migration 0012), exact values compared after. Each fact probes in a LATERAL subquery kept whole by
# OFFSET 0, so once the table has statistics the plan is an index lookup per fact: joined on the keys, the
# generic plan (estimating a handful of scope rows) read and hashed every row of the scope for both joins (most of
# a single store at 2,000 rows, EXPLAIN ANALYZE, growing with the scope), and an = ANY of the batch's keys
# still lost to the scope index where the table's scopes are small (tests/store/test_duplicate_plan.py). The batch's
# terms come as one JSON array of arrays, so no term is split or joined. No vector goes in: a row of the same
# terms comes back with its own and the planner takes the cosine (domain/write_plan.py). A dialogue turn
# (``turn_at`` its moment; NULL for any other fact) repeats only its own text said within ``same_turn`` of it
# (write_rules.is_repeated_turn), so it reads only those: players say "응" and "좋아해" every day, and a turn kept
# as a row each time had its store read every earlier one (after 300 of "좋아해" a store cost twice as much).
_BATCH = """
, b AS (
    SELECT u.*, t.terms, hash_array_extended(t.terms, 0) AS terms_hash
    FROM unnest(%(idx)s::int[], %(subjects)s::text[], %(subject_ids)s::text[], %(content_keys)s::text[],
                %(meaning_keys)s::text[], %(turn_ats)s::timestamptz[], %(dialogue_ids)s::text[],
                %(positions)s::int[])
        AS u(idx, subject, subject_id, content_key, meaning_key, turn_at, dialogue_id, dialogue_position)
    CROSS JOIN LATERAL (
        SELECT ARRAY(SELECT jsonb_array_elements_text(%(terms)s::jsonb -> u.idx))::text[] AS terms
    ) t
)"""
_PROBE = sql.SQL("""
SELECT b.idx, m.id, m.importance, m.content, m.content_key, m.terms, m.meaning, m.slot, m.tier, m.valid_at,
       {vector} AS embedding, NULL::text AS dialogue_id, NULL::int AS dialogue_position
FROM b CROSS JOIN LATERAL (
    SELECT * FROM {visible} m
    WHERE m.invalid_at IS NULL AND m.subject_id = b.subject_id AND m.dialogue_id IS NULL AND {key}
    OFFSET 0
) m
WHERE m.subject = b.subject AND b.dialogue_id IS NULL AND {matches}
""")
# A turn of a stated dialogue is a duplicate only of the turn stored at its place (closed or not): a resend.
_SAME_PLACE = sql.SQL("""
SELECT b.idx, m.id, m.importance, m.content, m.content_key, m.terms, m.meaning, m.slot, m.tier, m.valid_at,
       NULL::vector AS embedding, m.dialogue_id, m.dialogue_position
FROM b CROSS JOIN LATERAL (
    SELECT * FROM {visible} m
    WHERE m.dialogue_id = b.dialogue_id AND m.dialogue_position = b.dialogue_position
    OFFSET 0
) m
""").format(visible=PICKED)
_SAME_TEXT = _PROBE.format(visible=PICKED, key=sql.SQL("""md5(m.content_key) = md5(b.content_key)
      AND (b.turn_at IS NULL OR (m.valid_at > b.turn_at - %(same_turn)s::interval
                                 AND m.valid_at < b.turn_at + %(same_turn)s::interval))"""),
                           matches=sql.SQL("m.content_key = b.content_key"), vector=sql.SQL("NULL::vector"))
_SAME_TERMS = _PROBE.format(visible=PICKED, key=sql.SQL("hash_array_extended(m.terms, 0) = b.terms_hash"),
                            matches=sql.SQL("""b.turn_at IS NULL AND cardinality(b.terms) > 0 AND m.terms = b.terms
  AND m.content_key <> b.content_key AND array_to_string(m.meaning, ' ') = b.meaning_key"""),
                            vector=sql.SQL("m.embedding"))
DUPLICATE_CANDIDATES = with_view(sql.Composed([sql.SQL(_BATCH), _SAME_TEXT, sql.SQL("UNION ALL"), _SAME_TERMS,
                                                sql.SQL("UNION ALL"), _SAME_PLACE]))

# The versions of the slots the batch names that placing its facts can touch (domain/write_rules.place_in_slot): per
# slot, every version from the batch's earliest fact of it (``from_at``) on, and the newest version before that, per
# subject (ties to the larger id, as place_in_slot breaks them). Invalidated and retired rows are not part of a
# timeline. Every version once came back: a slot set every day ("호감도") made its store read and place among all of
# them (at 300 versions a store cost twice what it did at 10).
_SLOT_VERSIONS = sql.SQL("""
SELECT m.id, m.subject, m.subject_id, m.slot, m.valid_at, m.invalid_at
FROM {visible} m JOIN unnest(%(slots)s::text[], %(froms)s::timestamptz[]) AS s(slot, from_at) ON m.slot = s.slot
WHERE (m.close_reason IS NULL OR m.close_reason = 'superseded') AND m.valid_at {side} s.from_at""")
SLOT_TIMELINES = with_view(sql.SQL("""{later}
UNION ALL
(SELECT DISTINCT ON (m.subject, m.subject_id, m.slot) * FROM ({before}) m
 ORDER BY m.subject, m.subject_id, m.slot, m.valid_at DESC, m.id DESC)
""").format(later=_SLOT_VERSIONS.format(visible=PICKED, side=sql.SQL(">")),
            before=_SLOT_VERSIONS.format(visible=PICKED, side=sql.SQL("<="))))

TARGETS = with_view(sql.SQL("""
SELECT m.id, m.valid_at, m.invalid_at FROM {visible} m WHERE m.id = ANY(%(ids)s)
""").format(visible=PICKED))

# The columns a write sets, in insert_params' order; created_at and updated_at take the table's defaults.
# The load-test seeder COPYs these same columns (loadtest/seed.py).
INSERT_COLUMNS = (
    "id", "user_id", "heroine_id", "speaker", "subject", "subject_id", "content_type", "content", "content_key",
    "importance", "tier", "slot", "metadata", "embedding", "embedding_model", "terms", "meaning",
    "valid_at", "invalid_at", "close_reason", "superseded_by", "timeline_id", "visibility",
    "dialogue_id", "dialogue_position", "speaker_name",
)
INSERT = sql.SQL("INSERT INTO user_memories ({columns}) VALUES ({values})").format(
    columns=sql.SQL(", ").join(map(sql.Identifier, INSERT_COLUMNS)),
    values=sql.SQL(", ").join(map(sql.Placeholder, INSERT_COLUMNS)),
)


INLINE_BATCH = 8
"""Batches up to this size are planned on the event loop: a thread hop costs more than planning a few facts."""

def insert_params(
    scope: Scope, item: PreparedMemory, successor: tuple[UUID, datetime] | None, importance: int | None = None,
    timeline_id: int | None = None,
) -> dict[str, Any]:
    """The INSERT parameters of one prepared fact; ``successor`` makes it history closed at that version.

    ``timeline_id`` is the player's live timeline (None: the root, for a player who never saved).
    """
    fact = item.fact
    place = fact.place
    return {
        "id": item.id,
        "user_id": scope.user_id,
        "heroine_id": scope.heroine_id,
        "speaker": fact.speaker.value,
        "subject": fact.subject.value,
        "subject_id": fact.subject_id,
        "content_type": fact.content_type.value,
        "content": fact.content,
        "content_key": item.content_key,
        "importance": fact.importance if importance is None else importance,
        "tier": fact.tier.value,
        "slot": fact.slot,
        "metadata": Jsonb(fact.metadata),
        "embedding": item.embedding,
        "embedding_model": item.embedding_model,
        "terms": list(item.terms),
        "meaning": list(item.meaning),
        "valid_at": item.valid_at,
        "invalid_at": successor[1] if successor else None,
        "close_reason": "superseded" if successor else None,
        "superseded_by": successor[0] if successor else None,
        "timeline_id": ROOT_TIMELINE if timeline_id is None else timeline_id,
        "visibility": fact.visibility.value,
        "dialogue_id": place.dialogue_id if place else None,
        "dialogue_position": place.position if place else None,
        "speaker_name": (place.speaker_name or None) if place else None,
    }


def scope_params(scope: Scope) -> dict[str, Any]:
    """The parameters naming a scope and its live view: every statement names its player (docs/guide/scaling.md)."""
    return {"user_id": scope.user_id, "heroine_id": scope.heroine_id} | view_params()


# Statements the caller adds to the write transaction (an extraction job's completion), queued after the rows': they
# commit with them.
OnCommit = Callable[[Pipeline, list[StoreResult]], None]

Reads = tuple[Reply, Reply | None, Reply | None]

# The reads are 4-7 KB with the view: psycopg re-rendered and re-split them on every store (~30% of a single
# caller-vector store's Python samples, py-spy), so they are compiled once (store/compiled.py).
_DUPLICATES, _SLOTS, _TARGETS = map(compile_statement, (DUPLICATE_CANDIDATES, SLOT_TIMELINES, TARGETS))
# The writes too: psycopg rendered the INSERT's composed column list and parsed its placeholders on every store.
_INSERT, _INSERT_LINK, _CARRY_LINKS = map(compile_statement, (INSERT, sql.SQL(INSERT_LINK), sql.SQL(CARRY_LINKS)))
_LOCK_SCOPE, _LIVE_TIMELINE = (compile_statement(sql.SQL(q)) for q in (changes.LOCK_SCOPE, changes.LIVE_TIMELINE))


def duplicate_params(scope: Scope, items: Sequence[AnalysedFact]) -> dict[str, Any]:
    """The parameters of ``DUPLICATE_CANDIDATES`` for a batch."""
    return scope_params(scope) | {
        "idx": list(range(len(items))),
        "subjects": [i.fact.subject.value for i in items],
        "subject_ids": [i.fact.subject_id for i in items],
        "content_keys": [i.content_key for i in items],
        "terms": Jsonb([list(i.terms) for i in items]),
        "meaning_keys": [" ".join(i.meaning) for i in items],
        "turn_ats": [i.valid_at if repeats_only_itself(i) else None for i in items],
        "same_turn": SAME_TURN,
        "dialogue_ids": [p[0] if (p := place_of(i)) else None for i in items],
        "positions": [p[1] if (p := place_of(i)) else None for i in items],
    }


def _send_reads(pipe: Pipeline, scope: Scope, items: Sequence[AnalysedFact]) -> Reads:
    """Queue the reads of the stored rows the batch can touch (sent together on the pipeline's next ``send``)."""
    froms: dict[str, datetime] = {}
    for i in items:
        if i.fact.slot is not None:
            froms[i.fact.slot] = min(froms.get(i.fact.slot, i.valid_at), i.valid_at)
    slots = sorted(froms)
    ids = list(dict.fromkeys([*(t for i in items for t in i.fact.supersedes), *referenced_ids(items)]))
    dups = pipe.queue(_DUPLICATES, duplicate_params(scope, items))
    slot_rows = (pipe.queue(_SLOTS, scope_params(scope) | {"slots": slots, "froms": [froms[s] for s in slots]})
                 if slots else None)
    target_rows = pipe.queue(_TARGETS, scope_params(scope) | {"ids": ids}) if ids else None
    return dups, slot_rows, target_rows


async def _fetch_reads(
    pipe: Pipeline, reads: Reads, items: Sequence[AnalysedFact]
) -> tuple[list[DupCandidate], dict[SlotKey, list[SlotRow]], dict[UUID, Target]]:
    dup_reply, slot_reply, target_reply = reads
    dups = [
        DupCandidate(r["idx"], r["id"], r["importance"], None if r["embedding"] is None else r["embedding"].to_numpy(),
                     FactText.of(r["content"], r["terms"], r["meaning"]), r["slot"], Tier(r["tier"]), r["valid_at"],
                     None if r["dialogue_id"] is None else (r["dialogue_id"], r["dialogue_position"]))
        for r in await pipe.rows(dup_reply)
    ]
    timelines: dict[SlotKey, list[SlotRow]] = {}
    wanted = {k for k in map(slot_key, items) if k is not None}
    for r in await pipe.rows(slot_reply) if slot_reply is not None else []:
        key = (r["subject"], r["subject_id"], r["slot"])
        if key in wanted:
            timelines.setdefault(key, []).append(SlotRow(r["id"], r["valid_at"], r["invalid_at"]))
    targets = {
        r["id"]: Target(r["id"], r["valid_at"], r["invalid_at"])
        for r in (await pipe.rows(target_reply) if target_reply is not None else [])
    }
    return dups, timelines, targets


def _apply(pipe: Pipeline, scope: Scope, plan: WritePlan, links: Sequence[Link], live: int | None) -> None:
    """Queue a plan's writes: inserts first (closes and links point at them), then closes, raises and links.

    Their parameters are adapted when the pipeline sends them, one statement per turn of the event loop (a batch
    of 256 long facts adapted in one piece held the loop long enough to delay health checks).
    """
    for p in insert_order(plan.inserts):
        pipe.queue(_INSERT, insert_params(
            scope, p.item, (p.superseded_by, p.invalid_at) if p.superseded_by and p.invalid_at else None,
            p.importance, live,
        ))
    changes.queue(pipe, scope, [
        *(changes.close_params([row_id], at, "superseded", successor)
          for row_id, (at, successor) in plan.closes.items()),
        *(changes.edit_params([row_id], raise_to=importance) for row_id, importance in plan.raises.items()),
    ], live)
    for link in links:
        pipe.queue(_INSERT_LINK, link_params(scope, link))
    for row_id, (_, successor) in plan.closes.items():
        pipe.queue(_CARRY_LINKS, carry_params(scope, row_id, successor))


async def store_memories(
    db: Database, scope: Scope, items: Sequence[PreparedMemory], duplicate_threshold: float,
    request_id: str = "", fingerprint: str = "", idempotency_hours: float = 24.0,
    on_commit: OnCommit | None = None,
) -> list[StoreResult]:
    """Write a batch in one transaction under the scope's lock; any error rolls all of it back.

    Two round trips in one pipeline (store/pipelined.py): BEGIN, the lock, the idempotency key and the reads;
    then the writes, the key's record and COMMIT. With a ``request_id``, a live key returns its first response and
    writes nothing; the key is read and recorded under the scope's lock, so two identical requests racing write once.
    ``on_commit`` queues its statements last in the transaction, with the results (the first ones on a replay).
    """

    async def write(pipe: Pipeline) -> list[StoreResult]:
        pipe.queue(_LOCK_SCOPE, scope_params(scope))
        live_reply = pipe.queue(_LIVE_TIMELINE, scope_params(scope))
        key_reply = idempotency.queue_lookup(pipe, scope, request_id, idempotency_hours) if request_id else None
        reads = _send_reads(pipe, scope, items)
        await pipe.send()
        if key_reply is not None:
            first = idempotency.replay(await pipe.one(key_reply), request_id, fingerprint)
            if first is not None:
                if on_commit is not None:
                    on_commit(pipe, first)
                return first
        live_row = await pipe.one(live_reply)
        dups, timelines, targets = await _fetch_reads(pipe, reads, items)
        # Comparing every fact with the batch's earlier ones is a lot of Python for a full batch: in a thread, so
        # the event loop (health checks, other calls) gets the GIL back every switch interval meanwhile.
        plan = (plan_batch(items, dups, timelines, targets, duplicate_threshold) if len(items) <= INLINE_BATCH
                else await asyncio.to_thread(plan_batch, items, dups, timelines, targets, duplicate_threshold))
        _apply(pipe, scope, plan, batch_links(items, plan.results, targets.keys()),
               int(live_row["timeline_id"]) if live_row else None)
        if request_id:
            idempotency.queue_record(pipe, scope, request_id, fingerprint, plan.results)
        if on_commit is not None:
            on_commit(pipe, plan.results)
        return plan.results

    with span("db.write", facts=len(items)):
        async with db.connection() as conn, pipelined_transaction(conn) as pipe:
            return await write(pipe)
