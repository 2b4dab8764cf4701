"""The write path's dialogue steps around a store (domain/dialogue.py decides; these read what it needs).

Which facts of a request are dialogue turns, the text each turn is embedded with (the turn before it, an
answer), and the hook that gives an answered question its new vector in the write transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from uuid import UUID

from npc_memory.config import WriteConfig
from npc_memory.domain import dialogue
from npc_memory.domain.dialogue import StoredTurn
from npc_memory.domain.model import NewMemory, Scope, StoreResult, Vector
from npc_memory.store import writes
from npc_memory.store.dialogue import previous_turn, queue_turn_vector, said_in_dialogue
from npc_memory.store.pipelined import Pipeline
from npc_memory.store.pool import Database


async def turn_flags(
    db: Database, write: WriteConfig, scope: Scope, facts: Sequence[NewMemory], now: datetime,
    beside: Callable[[], object] | None = None,
) -> tuple[list[bool], StoredTurn | None]:
    """Which facts are dialogue turns (domain/dialogue.py), and the scope's latest row when a lone line read it.

    ``beside``: the caller's work, run while the database answers a read (called again after: it must run once).
    """
    turns = dialogue.turn_flags(facts, write.dialogue_batch_min)
    window = timedelta(minutes=write.dialogue_context_minutes)
    if window <= timedelta(0) or not dialogue.may_join(facts, turns, write.dialogue_batch_min):
        return turns, None
    # One line per request, no tier named: a turn when it answers the scope's latest row (another voice).
    at = facts[0].valid_at or now
    stored = await previous_turn(db, scope, at, at - window, beside)
    if stored is None and write.dialogue_repeated_lines:
        # Nothing said just before: a conversation's first line, a turn if it repeats a dialogue's line.
        return [await said_in_dialogue(db, scope, facts[0].content, facts[0].speaker, beside)], None
    return [dialogue.joins_dialogue(facts[0], stored, now, window, write.dialogue_same_voice)], stored


async def turn_texts(
    db: Database, write: WriteConfig, can_embed: bool, scope: Scope, facts: Sequence[NewMemory],
    turns: Sequence[bool], now: datetime, stored: StoredTurn | None = None,
    beside: Callable[[], object] | None = None,
) -> tuple[list[str] | None, tuple[UUID, str] | None]:
    """Dialogue turns with the turn before them (domain/dialogue.py); None when the batch has no turn.

    ``stored``: the scope's latest row when the caller already read it (a lone line). Second: the stored
    question this batch's first turn answers and its new embedded text (``dialogue.answered_text``). ``beside``:
    as ``turn_flags``'.
    """
    window = timedelta(minutes=write.dialogue_context_minutes)
    first = dialogue.first_turn_at(facts, turns, now)
    if first is None or window <= timedelta(0) or not can_embed:
        return None, None
    if stored is None:
        stored = await previous_turn(db, scope, first, first - window, beside)
    shape = dialogue.TurnContext(write.dialogue_context_answer, write.dialogue_context_when,
                                 write.dialogue_speaker_label)
    texts = dialogue.embedding_texts(facts, turns, now, window, stored, shape.with_answer, shape.when,
                                     shape.label, scope.heroine_id)
    answered = dialogue.answered_text(stored, facts, turns, now, window, shape, scope.heroine_id)
    return texts, None if answered is None or stored is None or stored.id is None else (stored.id, answered)


def with_answer(model: str, scope: Scope, question: UUID, vector: Vector, then: writes.OnCommit | None,
                ) -> writes.OnCommit:
    """The write transaction's last step: the answered question takes its new vector (then the caller's)."""
    def hook(pipe: Pipeline, results: list[StoreResult]) -> None:
        queue_turn_vector(pipe, scope, question, vector, model)
        if then is not None:
            then(pipe, results)
    return hook
