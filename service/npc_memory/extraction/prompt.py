"""The extraction prompt: the configured template filled with the scope and the dialogue."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from uuid import UUID

from npc_memory.domain.model import Scope, Speaker
from npc_memory.errors import ConfigError


@dataclass(frozen=True)
class Turn:
    """One line of a dialogue: who spoke, what was said, and when in the game's clock (if sent)."""

    speaker: Speaker
    text: str
    game_time: datetime | None = None
    memory_id: UUID | None = None
    """The turn's memory, for a dialogue stored by StoreDialogue: the facts extracted link to it (DERIVED_FROM)."""


def encode_turns(turns: Sequence[Turn]) -> list[dict[str, Any]]:
    """The turns as kept on the job row."""
    return [{"speaker": t.speaker.value, "text": t.text,
             "game_time": t.game_time.isoformat() if t.game_time else None}
            | ({"memory_id": str(t.memory_id)} if t.memory_id is not None else {}) for t in turns]


def decode_turns(data: Sequence[dict[str, Any]]) -> list[Turn]:
    """The turns of a job row."""
    return [Turn(Speaker(d["speaker"]), d["text"],
                 datetime.fromisoformat(d["game_time"]) if d.get("game_time") else None,
                 UUID(d["memory_id"]) if d.get("memory_id") else None) for d in data]


def load_template(path: Path) -> str:
    """The prompt template at ``path``; ConfigError if unreadable or missing a placeholder."""
    try:
        template = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"extraction prompt {path}: {exc}") from exc
    if "{dialogue}" not in template:
        raise ConfigError(f"extraction prompt {path} has no {{dialogue}} placeholder")
    return template


def render_dialogue(scope: Scope, turns: Sequence[Turn]) -> str:
    """The dialogue as lines ``player: …`` / ``letia: …``, with the game time when sent."""
    lines = []
    for t in turns:
        who = "player" if t.speaker is Speaker.USER else scope.heroine_id
        when = f"[{t.game_time.isoformat()}] " if t.game_time else ""
        lines.append(f'{when}{who}: "{t.text}"')
    return "\n".join(lines)


def build_prompt(template: str, scope: Scope, turns: Sequence[Turn], heroines: Sequence[str]) -> str:
    """The template filled for one dialogue."""
    return template.format(
        heroine_id=scope.heroine_id, heroines=", ".join(heroines), dialogue=render_dialogue(scope, turns)
    )
