"""The extraction prompt: the configured template filled with the scope and the dialogue."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from npc_memory.domain.jobs import Turn
from npc_memory.domain.model import Scope, Speaker
from npc_memory.errors import ConfigError


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
