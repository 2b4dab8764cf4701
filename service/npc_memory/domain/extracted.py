"""The facts a chat model extracted from a dialogue, checked one by one with StoreMemories' rules. Pure."""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, TypeVar

from npc_memory.domain.fact_rules import (
    FIXED_SUBJECT_IDS,
    MAX_IMPORTANCE,
    MIN_IMPORTANCE,
    heroine_id_ok,
    importance_ok,
    slot_problem,
    text_problem,
)
from npc_memory.domain.model import (
    DEFAULT_IMPORTANCE,
    ContentType,
    NewMemory,
    Speaker,
    Subject,
)

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
    if subject is not None and subject in FIXED_SUBJECT_IDS:
        fixed = FIXED_SUBJECT_IDS[subject]
        if value not in (None, "", fixed):
            reasons.append(f"subject_id: must be {fixed!r} for subject {subject.value!r}")
        return fixed
    if subject is Subject.HEROINE and (not isinstance(value, str) or not heroine_id_ok(value) or value not in heroines):
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
    if "content" in raw:
        problem = text_problem(content, max_content_chars) if isinstance(content, str) else "must be text"
        if problem:
            reasons.append(f"content: {problem}")
    importance = raw.get("importance", DEFAULT_IMPORTANCE)
    if "importance" in raw and (isinstance(importance, bool) or not isinstance(importance, int)
                                or not importance_ok(importance)):
        scale = f"{MIN_IMPORTANCE} and {MAX_IMPORTANCE}"
        reasons.append(f"importance: {importance!r} is not a whole number between {scale}")
    slot = raw.get("slot")
    if slot not in (None, ""):
        problem = slot_problem(slot) if isinstance(slot, str) else "must be text"
        if problem:
            reasons.append(f"slot: {problem}")
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
