"""Stated dialogues: a turn's place, the text its vector is taken over, a line said many times shown once.

The game states a dialogue (StoreDialogue: a dialogue id, its turns in order); nothing here guesses that facts are
one. A turn often means nothing alone ("응, 지난 화요일에!" answers "경주 언제 갔었어?"), so its vector is the mean of
three views of it (``turn_views``): the line alone, the line in its context (``turn_text``: the turn before it, and
for a question the turn that answers it), and the line between both its neighbours, each line after its speaker's
name. Its stored content and keyword terms stay the line itself. The conversation benchmark measures it
(docs/decisions/turn-vectors.md: one context text lost where the line alone carried the meaning, a wider window
drowned the line; the mean of the views kept both).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

import numpy as np

from npc_memory.domain.model import ScoredMemory, Speaker, Vector
from npc_memory.domain.write_rules import content_key

T = TypeVar("T")

MAX_SPEAKER_NAME = 64
"""The longest speaker name a turn may carry."""


@dataclass(frozen=True)
class Line:
    """One turn of a stated dialogue as said: who, what, the name the game shows, when."""

    speaker: Speaker
    text: str
    speaker_name: str = ""
    said_at: datetime | None = None


HANGUL = re.compile("[\uac00-\ud7a3]")


def speaker_label(line: Line, heroine_id: str) -> str:
    """The name a line is written after: the name the game gave, else "나" / "Me" for the player, the heroine's id.

    The player's default is how the player says it ("나" in a Korean line, "Me" otherwise): a question asks "내가 …"
    / "my …". The heroine's id is capitalised ("Letia"): how a question names her.
    """
    if line.speaker_name:
        return line.speaker_name
    if line.speaker is Speaker.USER:
        return "나" if HANGUL.search(line.text) else "Me"
    return heroine_id[:1].upper() + heroine_id[1:]


def said(line: Line, heroine_id: str) -> str:
    """The line after its speaker's name: "Letia: 응, 지난 화요일에!"."""
    return f"{speaker_label(line, heroine_id)}: {line.text}"


def asks(text: str) -> bool:
    """Whether a line is a question (ends with a question mark): the turn after it answers it."""
    return text.rstrip().rstrip("!~.…)").endswith(("?", "\uff1f"))


def turn_text(line: Line, previous: Line | None, following: Line | None, heroine_id: str) -> str:
    """The text a turn's vector is taken over: the turn before it, the turn, and a question's answer, each named.

    ``previous`` / ``following``: the turns at the positions just before and after it in its dialogue, when known.
    """
    text = said(line, heroine_id)
    if previous is not None:
        text = f"{said(previous, heroine_id)}\n{text}"
    if following is not None and asks(line.text):
        text = f"{text}\n{said(following, heroine_id)}"
    return text


def turn_views(line: Line, previous: Line | None, following: Line | None, heroine_id: str) -> tuple[str, ...]:
    """The texts a turn's vector is the mean of: the line alone, in context (``turn_text``), between its neighbours.

    One text's vector averages what it is given (two neighbours drown a short line); the mean of the views keeps the
    line's own meaning beside its context's (docs/decisions/turn-vectors.md).
    """
    both = "\n".join(said(t, heroine_id) for t in (previous, line, following) if t is not None)
    return said(line, heroine_id), turn_text(line, previous, following, heroine_id), both


def turn_vector(views: Sequence[Vector]) -> Vector:
    """The views' vectors averaged, not renormalised: one inner product with a query is the mean of its cosines."""
    return np.asarray(np.mean(np.stack(views), axis=0), dtype=np.float32)


def view_texts(views: Sequence[Sequence[str]]) -> list[str]:
    """Every text of ``views`` once, in first-seen order: what the model embeds (a line is in its neighbours' views)."""
    return list(dict.fromkeys(text for view in views for text in view))


def view_vectors(views: Sequence[Sequence[str]], texts: Sequence[str], embedded: Sequence[Vector]) -> list[Vector]:
    """Each entry of ``views`` as its texts' vectors averaged (``turn_vector``); ``embedded``: ``texts``' vectors."""
    of_text = dict(zip(texts, embedded, strict=True))
    return [turn_vector([of_text[text] for text in view]) for view in views]


REPEAT_HEADROOM = 2
"""Search asks the store for this many times ``limit`` hits, so that repeated lines collapsed still fill a page."""


def distinct_turns(hits: Sequence[ScoredMemory], limit: int) -> list[ScoredMemory]:
    """The hits in rank order without one whose text a better hit already said, cut to ``limit``.

    A line said in many dialogues is one event (row) per dialogue; ten copies of "ㅋㅋ 그러게" are no answer, so a
    search shows the best-ranked copy: with context vectors, the one said in the context that fits the question.
    """
    return distinct_contents(hits, _hit_content, limit)


def _hit_content(hit: ScoredMemory) -> str:
    return hit.memory.content


def distinct_contents(items: Iterable[T], content: Callable[[T], str], limit: int) -> list[T]:
    """``distinct_turns``' rule over any items in rank order: ``content`` gives each item's text."""
    seen: set[str] = set()
    out: list[T] = []
    for item in items:
        key = content_key(content(item))
        if key in seen:
            continue
        seen.add(key)
        out.append(item)
        if len(out) == limit:
            break
    return out
