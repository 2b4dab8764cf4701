"""The conversation benchmark's steps: how the conversations are stored, and the service settings they are asked under.

Used by ``python -m benchmarks.conversation.run --steps ...`` (docs/explanation/benchmarks.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from npc_memory.config import PeriodSearch, SearchConfig
from npc_memory.text import PLAIN, TextOptions

OLD_HALF_LIFE = 30.0 * math.log(2)
"""The recency half-life before the archive step (days): exp(-age / 30 days)."""


@dataclass(frozen=True)
class StepSettings:
    """How the turns are stored and the service settings the questions are asked under."""

    write: str
    """``dialogue``: each session one StoreDialogue request (its turns said at the session's date, no speaker names:
    the player's lines named "나" / "Me", the companion's by her id), the service's context vectors; ``dialogue-names``:
    the same with the names a game shows (the player's, the companion's); ``facts``: each session one StoreMemories
    request of plain facts (no tier: knowledge, the meaning duplicate rule, each embedded alone), at the session's
    date; ``source``: tier source, the turn's own vector given, a minute apart; ``knowledge``: the same as tier
    knowledge (the meaning duplicate rule)."""
    options: TextOptions
    period: PeriodSearch
    half_life_days: float = SearchConfig.recency_half_life_days


DEFAULT_TEXT = TextOptions()
"""The text options a new database records (English stems, Korean honorifics): stored and asked terms alike."""
STEPS: dict[str, StepSettings] = {
    "dialogue": StepSettings("dialogue", DEFAULT_TEXT, "first"),
    "facts": StepSettings("facts", DEFAULT_TEXT, "first"),
    "dialogue-names": StepSettings("dialogue-names", DEFAULT_TEXT, "first"),
    "dialogue-plain": StepSettings("dialogue", PLAIN, "first"),
}
"""Ways of storing measured side by side, each under the service's defaults otherwise. Each write mode stores the
conversations once more (under its own user ids), its terms made with its step's text options; the first step is
the defaults: a conversation stated as dialogues. ``dialogue-plain``: the text options of databases older than the
English and honorific ones (``PLAIN``), as the earlier rounds measured."""
