"""Extraction jobs and context blocks: the inputs and results of ExtractMemories, GetExtractionJob, BuildContext."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TypedDict
from uuid import UUID

from npc_memory_client import _requests as rq
from npc_memory_client import _results as rs
from npc_memory_client._enums import to_wire
from npc_memory_client._shapes import one_or_many
from npc_memory_client.model import Memory, Speaker, StoreResult
from npc_memory_client.v1 import context_pb2 as ctx_pb
from npc_memory_client.v1 import extraction_pb2 as ex_pb
from npc_memory_client.v1 import memory_service_pb2 as svc

_STATES = {
    ex_pb.EXTRACTION_JOB_STATE_PENDING: "pending", ex_pb.EXTRACTION_JOB_STATE_RUNNING: "running",
    ex_pb.EXTRACTION_JOB_STATE_DONE: "done", ex_pb.EXTRACTION_JOB_STATE_FAILED: "failed",
}
_SECTIONS = {
    ctx_pb.CONTEXT_SECTION_KIND_ABOUT_PLAYER: "about_player",
    ctx_pb.CONTEXT_SECTION_KIND_ABOUT_HEROINE: "about_heroine",
    ctx_pb.CONTEXT_SECTION_KIND_OPINIONS: "opinions", ctx_pb.CONTEXT_SECTION_KIND_RELEVANT: "relevant",
    ctx_pb.CONTEXT_SECTION_KIND_RECENT: "recent",
}


@dataclass(frozen=True)
class Turn:
    """One line of a dialogue."""

    text: str
    speaker: Speaker = Speaker.USER
    game_time: datetime | None = None
    speaker_name: str = ""
    """The name the game shows for the speaker ("민수", "Caroline"); ``store_dialogue`` embeds each line after it."""
    said_at: datetime | None = None
    """When the line was said: a stored turn's valid_at (default: ``game_time``, else the server's clock)."""


@dataclass(frozen=True)
class StoredDialogue:
    """What ``store_dialogue`` did: one result per turn, in order, and the extraction job when one was asked for."""

    turns: list[StoreResult]
    job: ExtractionJob | None = None


class ContextOptions(TypedDict, total=False):
    """Optional arguments of build_context."""

    token_budget: int
    include_shared: bool
    language: str
    now: datetime


@dataclass(frozen=True)
class ExtractedMemory:
    """A fact the model extracted and the service stored."""

    fact_index: int
    content: str
    result: StoreResult


@dataclass(frozen=True)
class RejectedFact:
    """A fact the model extracted that failed the checks, with every reason and the fact as written."""

    fact_index: int
    reasons: tuple[str, ...]
    raw: str


@dataclass(frozen=True)
class ExtractionJob:
    """An extraction job: ``state`` is pending, running, done or failed."""

    job_id: UUID
    dialogue_id: str
    state: str
    attempts: int
    last_error: str
    memories: tuple[ExtractedMemory, ...]
    rejected: tuple[RejectedFact, ...]


@dataclass(frozen=True)
class ContextItem:
    """One memory in a context block: its score, rendered line and tokens."""

    memory: Memory
    score: float
    text: str
    tokens: int


@dataclass(frozen=True)
class ContextSection:
    """One section of a block: about_player, about_heroine, opinions, relevant or recent."""

    kind: str
    title: str
    items: tuple[ContextItem, ...]
    text: str
    tokens: int


@dataclass(frozen=True)
class ContextBlock:
    """A prompt-ready block, its sections, tokens, and the memory ids left out for the budget."""

    text: str
    sections: tuple[ContextSection, ...]
    tokens: int
    token_budget: int
    left_out: tuple[UUID, ...]
    token_count_method: str


Turns = Turn | str | Sequence[Turn | str]
"""What ``extract`` and ``store_dialogue`` take: one turn, one line of the player, or a list of either."""
def _fill_dialogue(out: ex_pb.Dialogue, dialogue_id: str, turns: Turns) -> None:
    """The wire dialogue; a bare string is a line of the player."""
    out.dialogue_id = dialogue_id
    for t in one_or_many(turns, (Turn, str), "turns", 'a Turn, a line ("안녕") or a list of them'):
        turn = Turn(t) if isinstance(t, str) else t
        wire = out.turns.add(text=turn.text, speaker=to_wire(turn.speaker), speaker_name=turn.speaker_name)
        if turn.game_time is not None:
            wire.game_time.CopyFrom(rq.timestamp(turn.game_time))
        if turn.said_at is not None:
            wire.said_at.CopyFrom(rq.timestamp(turn.said_at))


def extract_request(
    user_id: str, heroine_id: str, dialogue_id: str, turns: Turns, wait: bool
) -> ex_pb.ExtractMemoriesRequest:
    """An ExtractMemories request; a bare string is a line of the player, and one turn a dialogue of one."""
    out = ex_pb.ExtractMemoriesRequest(
        scope=rq.scope(user_id, heroine_id),
        mode=ex_pb.EXTRACTION_MODE_SYNC if wait else ex_pb.EXTRACTION_MODE_ASYNC,
    )
    _fill_dialogue(out.dialogue, dialogue_id, turns)
    return out


def store_dialogue_request(
    user_id: str, heroine_id: str, dialogue_id: str, turns: Turns, first_position: int, extract: bool,
) -> svc.StoreDialogueRequest:
    """A StoreDialogue request; a bare string is a line of the player."""
    out = svc.StoreDialogueRequest(scope=rq.scope(user_id, heroine_id), first_position=first_position,
                                   extract=extract)
    _fill_dialogue(out.dialogue, dialogue_id, turns)
    return out


def stored_dialogue(response: svc.StoreDialogueResponse) -> StoredDialogue:
    """A StoreDialogue response as values."""
    return StoredDialogue([rs.store_result(r) for r in response.turns],
                          job(response.job) if response.HasField("job") else None)


def context_request(
    user_id: str, heroine_id: str, utterance: str, token_budget: int, include_shared: bool, language: str,
    now: datetime | None,
) -> ctx_pb.BuildContextRequest:
    """A BuildContext request."""
    out = ctx_pb.BuildContextRequest(
        scope=rq.scope(user_id, heroine_id), utterance=utterance, token_budget=token_budget,
        include_shared=include_shared, language=language,
    )
    if now is not None:
        out.now.CopyFrom(rq.timestamp(now))
    return out


def job_request(user_id: str, job_id: UUID | str) -> ex_pb.GetExtractionJobRequest:
    """A GetExtractionJob request."""
    return ex_pb.GetExtractionJobRequest(user_id=user_id, job_id=str(job_id))


def job(j: ex_pb.ExtractionJob) -> ExtractionJob:
    """A job from the wire."""
    return ExtractionJob(
        job_id=UUID(j.job_id), dialogue_id=j.dialogue_id, state=_STATES.get(j.state, "unspecified"),
        attempts=j.attempts, last_error=j.last_error,
        memories=tuple(ExtractedMemory(m.fact_index, m.content, rs.store_result(m.result)) for m in j.memories),
        rejected=tuple(RejectedFact(r.fact_index, tuple(r.reasons), r.raw) for r in j.rejected),
    )


def block(r: ctx_pb.BuildContextResponse) -> ContextBlock:
    """A context block from the wire."""
    return ContextBlock(
        text=r.text, tokens=r.tokens, token_budget=r.token_budget, token_count_method=r.token_count_method,
        sections=tuple(
            ContextSection(_SECTIONS.get(s.kind, "unspecified"), s.title,
                           tuple(ContextItem(rs.memory(i.memory), i.score, i.text, i.tokens) for i in s.items),
                           s.text, s.tokens)
            for s in r.sections
        ),
        left_out=tuple(UUID(x.memory_id) for x in r.left_out),
    )
