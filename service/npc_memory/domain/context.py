"""The context block: a heroine's memories arranged into prompt sections within a token budget. Pure.

Sections, in this order: what the heroine knows about the player; what the player has told about the heroine;
the heroine's opinions of the player; the memories most relevant to the current utterance; recent events.
A memory appears once, in the first section it belongs to. Within a section the most important comes first
(then the newest, then the id), except the relevant section (by search score) and recent events (newest
first). The budget is filled in two passes — first the head of every section, so no section is starved by
an earlier one, then the rest in section order — and whatever does not fit is reported as left out.
The same inputs give the same block.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from uuid import UUID

from npc_memory.domain.model import ContentType, Memory, Scope, ScoredMemory, Speaker, Subject


class Section(StrEnum):
    """The parts of the block, in the order they are filled and rendered."""

    ABOUT_PLAYER = "about_player"
    ABOUT_HEROINE = "about_heroine"
    OPINIONS = "opinions"
    RELEVANT = "relevant"
    RECENT = "recent"


TEMPLATES: dict[str, dict[str, str]] = {
    "ko": {
        Section.ABOUT_PLAYER: "{heroine}가 플레이어에 대해 아는 것",
        Section.ABOUT_HEROINE: "플레이어가 {heroine}에 대해 아는 것",
        Section.OPINIONS: "{heroine}가 플레이어를 어떻게 생각하는지",
        Section.RELEVANT: "지금 이야기와 관련된 기억",
        Section.RECENT: "최근 있었던 일",
        "header": "## {title}",
        "item": "- {content}",
        "shared": " (공유된 기억: {heroine}가 들음)",
    },
    "en": {
        Section.ABOUT_PLAYER: "What {heroine} knows about the player",
        Section.ABOUT_HEROINE: "What the player knows about {heroine}",
        Section.OPINIONS: "What {heroine} thinks of the player",
        Section.RELEVANT: "Memories relevant to what was just said",
        Section.RECENT: "Recent events",
        "header": "## {title}",
        "item": "- {content}",
        "shared": " (shared memory: heard by {heroine})",
    },
}
LANGUAGES = tuple(TEMPLATES)

COUNTING_METHOD = "estimate: 1 per Hangul/CJK/kana character, 1 per 4 other non-space characters, 1 per line"


# A heroine's profile lines come back in every block she is given, turn after turn: counting a line once (~6 us a
# line of 22 characters here, character by character) is enough. Bounded, so a game's distinct lines cannot grow it.
@lru_cache(maxsize=16384)
def estimate_tokens(text: str) -> int:
    """A tokenizer-free estimate, deliberately on the high side for Korean.

    Chat models' tokenizers (Qwen, Gemma, EXAONE, GPT-4o) spend about one token per Hangul syllable or less,
    and about one per four characters of Latin text; counting so keeps a block within a model's budget
    without shipping any one model's vocabulary.
    """
    wide = sum(1 for ch in text if unicodedata.east_asian_width(ch) in ("W", "F"))
    narrow = sum(1 for ch in text if not ch.isspace()) - wide
    return wide + math.ceil(narrow / 4) + text.count("\n") + 1


@dataclass(frozen=True)
class ContextItem:
    """One memory in the block: its section, the score it was ranked by, its line and that line's tokens."""

    memory: Memory
    section: Section
    score: float
    shared: bool
    line: str
    tokens: int


@dataclass(frozen=True)
class ContextSection:
    """A section as taken: its title, items in order, rendered text and tokens (header included)."""

    section: Section
    title: str
    items: tuple[ContextItem, ...]
    text: str
    tokens: int


@dataclass(frozen=True)
class LeftOut:
    """A memory that belonged in the block but did not fit the budget."""

    memory_id: UUID
    section: Section
    tokens: int


@dataclass(frozen=True)
class ContextBlock:
    """The block: the sections that have items, the whole text, its tokens, and what was left out."""

    sections: tuple[ContextSection, ...]
    text: str
    tokens: int
    budget: int
    left_out: tuple[LeftOut, ...]


def classify(m: Memory, heroine_id: str) -> Section | None:
    """The profile section a memory belongs to, if any (relevance is decided by the search)."""
    if m.speaker is Speaker.HEROINE and m.subject is Subject.USER and m.content_type is ContentType.OPINION:
        return Section.OPINIONS
    if m.subject is Subject.USER:
        return Section.ABOUT_PLAYER
    if m.subject is Subject.HEROINE and m.subject_id == heroine_id:
        return Section.ABOUT_HEROINE
    if m.content_type is ContentType.EVENT:
        return Section.RECENT
    return None


def _candidates(
    scope: Scope, profile: Sequence[Memory], relevant: Sequence[ScoredMemory]
) -> dict[Section, list[tuple[Memory, float]]]:
    by_section: dict[Section, list[tuple[Memory, float]]] = {s: [] for s in Section}
    for m in profile:
        section = classify(m, scope.heroine_id)
        if section is not None:
            by_section[section].append((m, m.importance / 10))
    for section in (Section.ABOUT_PLAYER, Section.ABOUT_HEROINE, Section.OPINIONS):
        by_section[section].sort(key=lambda p: (-p[0].importance, -p[0].valid_at.timestamp(), p[0].id))
    by_section[Section.RECENT].sort(key=lambda p: (-p[0].valid_at.timestamp(), p[0].id))
    placed = {m.id for section in (Section.ABOUT_PLAYER, Section.ABOUT_HEROINE, Section.OPINIONS)
              for m, _ in by_section[section]}
    by_section[Section.RELEVANT] = [(h.memory, h.scores.final) for h in relevant if h.memory.id not in placed]
    placed |= {m.id for m, _ in by_section[Section.RELEVANT]}
    by_section[Section.RECENT] = [(m, s) for m, s in by_section[Section.RECENT] if m.id not in placed]
    return by_section


def assemble(
    scope: Scope, profile: Sequence[Memory], relevant: Sequence[ScoredMemory], budget: int, language: str
) -> ContextBlock:
    """Arrange the memories into the block for ``scope``'s heroine within ``budget`` tokens."""
    t = TEMPLATES[language]
    candidates = _candidates(scope, profile, relevant)
    items: dict[Section, list[ContextItem]] = {s: [] for s in Section}
    titles = {s: t[s].format(heroine=scope.heroine_id) for s in Section}
    header_tokens = {s: estimate_tokens(t["header"].format(title=titles[s])) for s in Section}
    for section, pairs in candidates.items():
        for m, score in pairs:
            shared = m.scope != scope
            line = t["item"].format(content=m.content) + (t["shared"].format(heroine=m.scope.heroine_id)
                                                         if shared else "")
            items[section].append(ContextItem(m, section, score, shared, line, estimate_tokens(line)))
    used = 0
    taken: dict[Section, set[UUID]] = {s: set() for s in Section}
    order = [(s, group[0]) for s, group in items.items() if group]
    order += [(s, item) for s, group in items.items() for item in group[1:]]
    left_out = []
    for section, item in order:
        cost = item.tokens + (header_tokens[section] if not taken[section] else 0)
        if used + cost <= budget:
            taken[section].add(item.memory.id)
            used += cost
        else:
            left_out.append(LeftOut(item.memory.id, section, item.tokens))
    sections = []
    for section, group in items.items():
        kept = tuple(i for i in group if i.memory.id in taken[section])
        if kept:
            text = "\n".join([t["header"].format(title=titles[section]), *(i.line for i in kept)])
            sections.append(ContextSection(section, titles[section], kept, text,
                                           header_tokens[section] + sum(i.tokens for i in kept)))
    return ContextBlock(tuple(sections), "\n\n".join(s.text for s in sections), used, budget, tuple(left_out))
