"""The shape of a conversation vocabulary: what a language module (vocab_ko, vocab_en) fills in.

Templates are ``str.format`` strings. ``{v}`` is the value told, ``{o}`` another value of the same topic (for
questions about something never said), ``{old}`` the value a change of mind replaces, ``{h}`` the companion's
name, ``{p}`` a period ("지난달에", "last May"). Korean templates may write ``{v:을/를}`` for the particle that fits.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field
from typing import Any


def batchim(word: str) -> bool:
    """Whether the last syllable of ``word`` has a final consonant (decides 을/를, 이/가, 은/는, 으로/로)."""
    last = word[-1]
    if "가" <= last <= "힣":
        return (ord(last) - 0xAC00) % 28 != 0
    return last in "0136789lmnLMN"


def _josa(word: str, pair: str) -> str:
    with_final, without = pair.split("/")
    if with_final == "으로" and "가" <= word[-1] <= "힣" and (ord(word[-1]) - 0xAC00) % 28 == 8:
        return word + without  # ㄹ-final takes 로: 서울로
    return word + (with_final if batchim(word) else without)


class _Josa(string.Formatter):
    """``{v:을/를}`` puts the particle form that fits ``v``; other specs format as usual."""

    def format_field(self, value: Any, format_spec: str) -> str:
        return _josa(str(value), format_spec) if "/" in format_spec else format(value, format_spec)


def say(template: str, **values: str) -> str:
    """Fill a template, choosing Korean particles by the final consonant of each value."""
    return _Josa().format(template, **values)


@dataclass(frozen=True)
class Fact:
    """Something the player tells once, in one turn; asked about with paraphrases that avoid its words.

    ``lines`` maps each value to the ways of saying it; ``decoys`` ask about another value ``{o}`` that
    was never said (questions with no evidence); ``chatter`` mentions the topic without telling the fact.
    """

    key: str
    lines: dict[str, tuple[str, ...]]
    questions: tuple[str, ...]
    decoys: tuple[str, ...] = ()
    chatter: tuple[str, ...] = ()


@dataclass(frozen=True)
class Pair:
    """A fact told as a question by the companion and a reply that means nothing without it."""

    key: str
    asks: tuple[str, ...]
    replies: tuple[str, ...]
    questions: tuple[str, ...]


@dataclass(frozen=True)
class EventKind:
    """Dated happenings of one kind (trips, meals out, ...), several per conversation.

    ``period_questions`` put the date in the question (``{p}``); ``when_asks``/``when_replies`` tell an
    event as the companion's question and a reply like "응, 지난 화요일에!", asked about by ``when_questions``;
    ``all_questions`` ask for every event of the kind (evidence across sessions).
    """

    key: str
    lines: dict[str, tuple[str, ...]]
    period_questions: tuple[str, ...]
    all_questions: tuple[str, ...]
    when_asks: tuple[str, ...] = ()
    when_replies: tuple[str, ...] = ()
    when_questions: tuple[str, ...] = ()


@dataclass(frozen=True)
class Change:
    """A preference told early and changed later: the question wants the newer turn."""

    key: str
    values: tuple[str, ...]
    before: tuple[str, ...]
    after: tuple[str, ...]
    questions: tuple[str, ...]


@dataclass(frozen=True)
class Companion:
    """The heroine or companion: her name, her own facts (line, question), and things she never said."""

    name: str
    facts: tuple[tuple[str, str], ...]
    never: tuple[str, ...]
    openers: tuple[str, ...] = ()


@dataclass(frozen=True)
class Small:
    """Small talk: filler lines of each side, filler question/answer pairs, greetings and goodbyes."""

    user: tuple[str, ...]
    other: tuple[str, ...]
    pairs: tuple[tuple[str, str], ...]
    openers: tuple[tuple[str, str], ...]
    closers: tuple[tuple[str, str], ...]
    times: tuple[str, ...] = ()
    """When a day-to-day line happened ("아까", "this morning"): joined with ``user_days`` / ``other_days``."""
    user_days: tuple[str, ...] = ()
    other_days: tuple[str, ...] = ()
    feelings: tuple[str, ...] = ("",)
    """An afterthought closing a day-to-day line (may be empty)."""
    day_line: str = "{t} {a} {f}"


@dataclass(frozen=True)
class Periods:
    """How a language names the period an event fell in, relative to the day the questions are asked."""

    last_week: str
    last_month: str
    month_this_year: str
    month_last_year: str
    month_names: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class Vocab:
    """Everything one language needs to write conversations."""

    language: str
    facts: tuple[Fact, ...]
    pairs: tuple[Pair, ...]
    events: tuple[EventKind, ...]
    changes: tuple[Change, ...]
    small: Small
    periods: Periods
