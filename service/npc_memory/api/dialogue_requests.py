"""StoreDialogue requests → a validated stated dialogue (or every bad field at once)."""

from __future__ import annotations

from dataclasses import dataclass

from npc_memory_client.v1 import memory_service_pb2 as svc

from npc_memory.api import enums
from npc_memory.api.validation import MAX_REQUEST_ID, Checker
from npc_memory.config import WriteConfig
from npc_memory.domain.dialogue import MAX_SPEAKER_NAME, Line
from npc_memory.domain.model import Scope
from npc_memory.engine.dialogue import LAST_POSITION, StatedDialogue


@dataclass(frozen=True)
class StoreDialogueRequest:
    """A validated StoreDialogue call."""

    scope: Scope
    dialogue: StatedDialogue
    extract: bool


def parse_store_dialogue(request: svc.StoreDialogueRequest, write: WriteConfig) -> StoreDialogueRequest:
    """Validate a StoreDialogue request: the scope, the dialogue id, each turn, where the turns start."""
    c = Checker()
    scope = c.scope("scope", request.scope, request.HasField("scope"))
    if not request.HasField("dialogue"):
        c.bad("dialogue", "is required")
    dialogue = request.dialogue
    c.text("dialogue.dialogue_id", dialogue.dialogue_id, max_chars=MAX_REQUEST_ID)
    turns = dialogue.turns
    if request.HasField("dialogue") and not turns:
        c.bad("dialogue.turns", "at least one turn is required")
    elif len(turns) > write.max_batch:
        c.bad("dialogue.turns", f"{len(turns)} turns; the maximum is {write.max_batch}")
    first = request.first_position
    if first < 0:
        c.bad("first_position", "must be >= 0")
    elif first + len(turns) - 1 > LAST_POSITION:
        c.bad("first_position", f"the turns' positions must stay below {LAST_POSITION + 1}")
    lines = []
    for i, t in enumerate(turns):
        path = f"dialogue.turns[{i}]"
        speaker = c.enum(f"{path}.speaker", t.speaker, enums.SPEAKERS)
        text = c.text(f"{path}.text", t.text, max_chars=write.max_content_chars)
        name = c.text(f"{path}.speaker_name", t.speaker_name, max_chars=MAX_SPEAKER_NAME, required=False)
        if name != name.strip() or "\n" in name:
            c.bad(f"{path}.speaker_name", "must not start or end with whitespace or hold a line break")
        said_at = c.timestamp(f"{path}.said_at", t.said_at, t.HasField("said_at"))
        game_time = c.timestamp(f"{path}.game_time", t.game_time, t.HasField("game_time"))
        if speaker is not None:
            lines.append(Line(speaker, text, name, said_at or game_time))
    c.done()
    return StoreDialogueRequest(scope, StatedDialogue(dialogue.dialogue_id, first, tuple(lines)), request.extract)
