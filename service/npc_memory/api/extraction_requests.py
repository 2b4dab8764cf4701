"""ExtractMemories and GetExtractionJob requests → validated values (or every bad field at once)."""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from npc_memory_client.v1 import extraction_pb2 as ex_pb

from npc_memory.api import enums
from npc_memory.api.validation import MAX_REQUEST_ID, Checker
from npc_memory.domain.jobs import Turn
from npc_memory.domain.model import Scope

MAX_TURNS = 200
MAX_TURN_CHARS = 4000
MODES: dict[int, bool] = {ex_pb.EXTRACTION_MODE_ASYNC: False, ex_pb.EXTRACTION_MODE_SYNC: True}


@dataclass(frozen=True)
class ExtractRequest:
    """A validated ExtractMemories call."""

    scope: Scope
    dialogue_id: str
    turns: list[Turn]
    sync: bool


def parse_extract(request: ex_pb.ExtractMemoriesRequest) -> ExtractRequest:
    """Validate an ExtractMemories request."""
    c = Checker()
    scope = c.scope("scope", request.scope, request.HasField("scope"))
    dialogue = request.dialogue
    c.text("dialogue.dialogue_id", dialogue.dialogue_id, max_chars=MAX_REQUEST_ID)
    if not dialogue.turns:
        c.bad("dialogue.turns", "at least one turn is required")
    elif len(dialogue.turns) > MAX_TURNS:
        c.bad("dialogue.turns", f"{len(dialogue.turns)} turns; the maximum is {MAX_TURNS}")
    turns = []
    for i, t in enumerate(dialogue.turns):
        path = f"dialogue.turns[{i}]"
        speaker = c.enum(f"{path}.speaker", t.speaker, enums.SPEAKERS)
        text = c.text(f"{path}.text", t.text, max_chars=MAX_TURN_CHARS)
        when = c.timestamp(f"{path}.game_time", t.game_time, t.HasField("game_time"))
        if speaker is not None:
            turns.append(Turn(speaker, text, when))
    sync = c.enum("mode", request.mode, MODES, False)
    c.done()
    return ExtractRequest(scope, dialogue.dialogue_id, turns, bool(sync))


def parse_get_job(request: ex_pb.GetExtractionJobRequest) -> tuple[str, UUID]:
    """Validate a GetExtractionJob request."""
    c = Checker()
    user_id = c.user_id("user_id", request.user_id)
    job_id = c.uuid("job_id", request.job_id, "job")
    c.done()
    return user_id, job_id
