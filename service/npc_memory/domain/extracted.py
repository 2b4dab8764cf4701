"""The facts a chat model extracted from a dialogue, checked one by one with StoreMemories' rules. Pure."""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, TypeVar

from npc_memory.domain.model import (
    DEFAULT_IMPORTANCE,
    USER_SUBJECT_ID,
    WORLD_SUBJECT_ID,
    ContentType,
    NewMemory,
    Speaker,
    Subject,
)

MAX_SLOT = 128
SLOT = re.compile(r"^\S(.*\S)?$")
E = TypeVar("E", Speaker, Subject, ContentType)


@dataclass(frozen=True)
class RejectedFact:
    """One fact of the model's answer that was not stored, with every reason."""

    index: int
    reasons: tuple[str, ...]
    raw: str


@dataclass(frozen=True)
class CheckedFacts:
    """The model's answer split into facts to store (with their index in the answer) and rejected ones."""

    accepted: tuple[tuple[int, NewMemory], ...]
    rejected: tuple[RejectedFact, ...]


class ModelOutputError(ValueError):
    """The answer as a whole is unusable (not JSON, no ``facts`` list): the attempt failed, the job may retry."""


def _enum(reasons: list[str], name: str, value: object, kind: type[E]) -> E | None:
    if isinstance(value, str) and value in kind.__members__.values():
        return kind(value)
    allowed = ", ".join(e.value for e in kind)
    reasons.append(f"{name}: {value!r} is not one of {allowed}")
    return None


def _subject_id(reasons: list[str], subject: Subject | None, value: object, heroines: Collection[str]) -> str:
    expected = {Subject.USER: USER_SUBJECT_ID, Subject.WORLD: WORLD_SUBJECT_ID}
    if subject in expected:
        if value not in (None, "", expected[subject]):
            reasons.append(f"subject_id: must be {expected[subject]!r} for subject {subject.value!r}")
        return expected[subject]
    if subject is Subject.HEROINE and value not in heroines:
        reasons.append(f"subject_id: {value!r} is not a heroine the game knows ({', '.join(sorted(heroines))})")
    return str(value)


def check_fact(
    index: int, raw: object, heroines: Collection[str], max_content_chars: int
) -> tuple[int, NewMemory] | RejectedFact:
    """One fact of the answer as a NewMemory, or every reason it cannot be stored."""
    text = json.dumps(raw, ensure_ascii=False)
    if not isinstance(raw, dict):
        return RejectedFact(index, ("is not an object",), text)
    reasons: list[str] = []
    for name in ("speaker", "subject", "subject_id", "content_type", "content", "importance"):
        if name not in raw:
            reasons.append(f"{name}: is required")
    speaker = _enum(reasons, "speaker", raw.get("speaker"), Speaker) if "speaker" in raw else None
    subject = _enum(reasons, "subject", raw.get("subject"), Subject) if "subject" in raw else None
    content_type = _enum(reasons, "content_type", raw.get("content_type"), ContentType) \
        if "content_type" in raw else None
    subject_id = _subject_id(reasons, subject, raw.get("subject_id"), heroines) if "subject_id" in raw else ""
    content = raw.get("content")
    if "content" in raw and (not isinstance(content, str) or not content.strip()):
        reasons.append("content: must be non-empty text")
    elif isinstance(content, str) and (len(content) > max_content_chars or "\x00" in content):
        reasons.append(f"content: must be at most {max_content_chars} characters without NUL")
    importance = raw.get("importance", DEFAULT_IMPORTANCE)
    if "importance" in raw and (isinstance(importance, bool) or not isinstance(importance, int)
                                or not 1 <= importance <= 10):
        reasons.append(f"importance: {importance!r} is not a whole number between 1 and 10")
    slot = raw.get("slot")
    if slot not in (None, "") and (not isinstance(slot, str) or len(slot) > MAX_SLOT or not SLOT.match(slot)):
        reasons.append(f"slot: must be text of at most {MAX_SLOT} characters without surrounding spaces")
    if reasons or speaker is None or subject is None or content_type is None or not isinstance(content, str):
        return RejectedFact(index, tuple(reasons), text)
    return index, NewMemory(
        speaker=speaker, subject=subject, subject_id=subject_id, content_type=content_type,
        content=content.strip(), importance=importance, slot=slot or None,
    )


def check_answer(answer: str, heroines: Collection[str], max_content_chars: int) -> CheckedFacts:
    """Parse the model's JSON answer ``{"facts": [...]}`` and check each fact; ModelOutputError if unusable."""
    try:
        data: Any = json.loads(answer)
    except json.JSONDecodeError as exc:
        raise ModelOutputError(f"the model's answer is not JSON: {exc}") from exc
    facts = data.get("facts") if isinstance(data, dict) else None
    if not isinstance(facts, list):
        raise ModelOutputError("the model's answer has no 'facts' list")
    accepted: list[tuple[int, NewMemory]] = []
    rejected: list[RejectedFact] = []
    for i, raw in enumerate(facts):
        checked = check_fact(i, raw, heroines, max_content_chars)
        if isinstance(checked, RejectedFact):
            rejected.append(checked)
        else:
            accepted.append(checked)
    return CheckedFacts(tuple(accepted), tuple(rejected))
