"""StoreDialogue as a use case: a stated dialogue's turns stored as source memories, embedded with their context.

Each turn is a memory of tier source at its place (dialogue id, position), linked to the turn before it, its vector
taken over the text ``domain/dialogue.turn_text`` makes from its neighbours in the dialogue. A request continues the
dialogue at ``first_position``: the stored turn before it is the first new turn's context, and a stored question
whose answer this request brings takes its vector again (in the same transaction), so a dialogue streamed line by
line ends with the vectors it gets when stored in one request. A turn resent at its place is the stored turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from npc_memory.domain import dialogue
from npc_memory.domain.dialogue import Line
from npc_memory.domain.errors import DialogueNeedsEmbedderError, TextRefusedError, TurnPlaceTakenError
from npc_memory.domain.jobs import Job, Turn, encode_turns
from npc_memory.domain.model import (
    USER_SUBJECT_ID,
    ContentType,
    MemoryRef,
    NewMemory,
    Scope,
    Speaker,
    StoreOutcome,
    StoreResult,
    Subject,
    Tier,
    TurnPlace,
)
from npc_memory.domain.write_rules import content_key
from npc_memory.engine import MemoryEngine
from npc_memory.errors import InputRejectedError
from npc_memory.ops.metrics import EMBED_SECONDS
from npc_memory.ops.tracing import span
from npc_memory.store import jobs
from npc_memory.store.dialogue import StoredTurn, queue_turn_vector, stored_turns
from npc_memory.store.pipelined import Pipeline

LAST_POSITION = 2**31 - 1
"""The largest position a turn can have (the column is an int)."""


@dataclass(frozen=True)
class StatedDialogue:
    """A validated StoreDialogue call's dialogue: its id, where this request's turns start, the turns in order."""

    dialogue_id: str
    first_position: int
    lines: tuple[Line, ...]


def _same_line(stored: Line, sent: Line) -> bool:
    return stored.speaker is sent.speaker and content_key(stored.text) == content_key(sent.text)


def _turn_fact(scope: Scope, line: Line, place: TurnPlace, previous: MemoryRef | None) -> NewMemory:
    """A turn as the memory it is stored as: a source the speaker said, about the speaker, linked to the turn before."""
    user = line.speaker is Speaker.USER
    return NewMemory(
        speaker=line.speaker, subject=Subject.USER if user else Subject.HEROINE,
        subject_id=USER_SUBJECT_ID if user else scope.heroine_id, content_type=ContentType.FACT, content=line.text,
        tier=Tier.SOURCE, valid_at=line.said_at, related=() if previous is None else (previous,), place=place,
    )


async def store_dialogue(
    engine: MemoryEngine, scope: Scope, stated: StatedDialogue, extract: bool = False,
) -> tuple[list[StoreResult], Job | None]:
    """Store the turns (one transaction, all or nothing); with ``extract``, queue the dialogue's job in it too."""
    if not engine.embedder.available:
        raise DialogueNeedsEmbedderError
    first, count = stated.first_position, len(stated.lines)
    last = first + count - 1
    # The stored turns this request touches: the two before it (context, a question answered now), its own places
    # (a resend) and the one after it (the last turn's answer, when an earlier part is resent); all for a job.
    stored = await stored_turns(engine.db, scope, stated.dialogue_id, 0 if extract else max(first - 2, 0),
                                LAST_POSITION if extract else last + 1)
    at = {t.position: t for t in stored}
    for i, line in enumerate(stated.lines):
        held = at.get(first + i)
        if held is not None and not _same_line(held.line, line):
            raise TurnPlaceTakenError(i, stated.dialogue_id, first + i)
    known: dict[int, Line] = {p: t.line for p, t in at.items()} | {first + i: ln for i, ln in enumerate(stated.lines)}
    heroine = scope.heroine_id

    def views_at(position: int) -> tuple[str, ...]:
        return dialogue.turn_views(known[position], known.get(position - 1), known.get(position + 1), heroine)

    new = [i for i in range(count) if first + i not in at]
    added = {first + i for i in new}
    # The stored turns just beside the new ones gain a neighbour, so their vector is made again (a question stored
    # before its answer came, a turn stored before the one after it).
    beside = [t for p, t in sorted(at.items()) if p - 1 in added or p + 1 in added]
    views = [views_at(first + i) for i in new] + [views_at(t.position) for t in beside]
    texts = dialogue.view_texts(views)
    try:
        with EMBED_SECONDS.labels("passages").time(), span("embed", texts=len(texts)):
            embedded = await engine.embedder.embed_passages(texts) if texts else []
    except InputRejectedError as exc:
        raise TextRefusedError("turns", new, exc.detail) from exc
    vectors = dialogue.view_vectors(views, texts, embedded)
    again = list(zip(beside, vectors[len(new):], strict=True))
    made = dict(zip(new, vectors, strict=False))
    batch = {i: k for k, i in enumerate(new)}  # request index -> index among the facts stored now
    facts = []
    for i in new:
        position, line = first + i, stated.lines[i]
        previous: MemoryRef | None = (batch[i - 1] if i - 1 in batch
                                      else at[position - 1].id if position - 1 in at else None)
        place = TurnPlace(stated.dialogue_id, position, line.speaker_name)
        facts.append(replace(_turn_fact(scope, line, place, previous), embedding=made[i]))
    model = engine.embedder.name

    def then(pipe: Pipeline, results: Sequence[StoreResult]) -> None:
        for turn, vector in again:
            queue_turn_vector(pipe, scope, turn.id, vector, model)
        if extract:
            jobs.queue_enqueue(pipe, scope, stated.dialogue_id, encode_turns(
                _job_turns(stored, first, stated.lines, _all_results(stated, at, new, results))))

    if facts:
        stored_now = await engine.store(scope, facts, on_commit=then)
    else:  # every turn resent: nothing to write but the job
        stored_now = []
        if extract:
            await jobs.enqueue(engine.db, scope, stated.dialogue_id, encode_turns(
                _job_turns(stored, first, stated.lines, _all_results(stated, at, new, []))))
    results = _all_results(stated, at, new, stored_now)
    job = await jobs.by_dialogue(engine.db, scope, stated.dialogue_id) if extract else None
    return results, job


def _all_results(stated: StatedDialogue, at: dict[int, StoredTurn], new: Sequence[int],
                 stored_now: Sequence[StoreResult]) -> list[StoreResult]:
    """One result per turn of the request: the stored turn for a resend, else what storing it did."""
    now = dict(zip(new, stored_now, strict=False))
    return [now[i] if i in now else StoreResult(at[stated.first_position + i].id, StoreOutcome.DUPLICATE)
            for i in range(len(stated.lines))]


def _job_turns(stored: Sequence[StoredTurn], first: int, lines: Sequence[Line],
               results: Sequence[StoreResult]) -> list[Turn]:
    """The dialogue as its extraction job keeps it: every turn known, in order, each with its memory."""
    by_position: dict[int, Turn] = {t.position: Turn(t.line.speaker, t.line.text, t.line.said_at, t.id)
                                    for t in stored}
    for i, (line, result) in enumerate(zip(lines, results, strict=True)):
        by_position[first + i] = Turn(line.speaker, line.text, line.said_at, result.memory_id)
    return [by_position[p] for p in sorted(by_position)]
