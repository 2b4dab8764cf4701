"""Dialogue turns: which memories are raw utterances, the text their vector is taken over, repeats in results.

A turn often means nothing alone ("응, 지난 화요일에!" answers "경주 언제 갔었어?"). A dialogue turn (tier
``source``, at most ``MAX_TURN_CHARS``, or any fact of a request that reads as a dialogue: ``dialogue_batch``)
whose vector the service makes is embedded together with the turn before it in the same scope, when that turn
was said at most the context window earlier: the previous turn of the same batch (a session stored in one
request), or the scope's latest stored turn (one turn per request).
Each line of that text carries its speaker ("나: …" / "Me: …" for the player, the heroine's id for her:
``speaker_label``), unless the line already starts with a name ("Caroline: …"). A transcript stored with one
speaker field and the names in the text is read by those names (``voices``), and a request of one line with
no tier is a turn when it answers another voice's latest row, said at the same moment or named (``joins_dialogue``).
The stored content and keyword terms stay the line itself. Search shows a line said many times once
(``distinct_turns``): every turn is kept as its own event, but ten copies of "ㅋㅋ 그러게" are no answer.
``python -m benchmarks.conversation.run`` measures each (docs/conversation-benchmark.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from itertools import pairwise
from typing import Literal, TypeVar
from uuid import UUID

from npc_memory.domain.model import NewMemory, ScoredMemory, Speaker, Tier
from npc_memory.domain.write_rules import content_key

T = TypeVar("T")

MAX_TURN_CHARS = 400
"""Longer source memories are documents, not turns: they carry their own context."""


@dataclass(frozen=True)
class StoredTurn:
    """The scope's latest stored dialogue turn before a batch's first turn."""

    content: str
    valid_at: datetime
    speaker: Speaker | None = None
    id: UUID | None = None
    previous: tuple[str, Speaker] | None = None
    """The line said before it within the window (its own context), when read for ``answered_text``."""
    moment_voices: bool = False
    """Whether another speaker said a line at the same moment: its session is stored line by line at one date."""


def is_turn(fact: NewMemory) -> bool:
    """Whether ``fact`` is a dialogue turn: a raw utterance (tier source), short enough to need its neighbour."""
    return fact.tier is Tier.SOURCE and len(fact.content) <= MAX_TURN_CHARS


SPEAKER_CHANGE_SHARE = 0.5
"""A dialogue's speaker changes between at least this share of consecutive lines (request order).

The conversation benchmark's sessions change at 0.62-1.0 (mean 0.87) of their gaps.
"""


def may_be_said(fact: NewMemory) -> bool:
    """Whether a fact could be a spoken line: short, not a gist, no slot, supersedes list or parents.

    Those are what a client or the extraction states as a fact, never a line of dialogue.
    """
    return not (fact.tier is Tier.GIST or fact.slot is not None or fact.supersedes or fact.parents
                or len(fact.content) > MAX_TURN_CHARS)


def dialogue_batch(facts: Sequence[NewMemory], min_facts: int) -> bool:
    """Whether a request reads as a stored conversation, whatever tier it names: turn by turn, both speaking.

    At least ``min_facts`` (0: never) short lines, none a gist, none with a slot, a supersedes list or parents
    (what a client or the extraction states as a fact), the speaker changing between at least
    ``SPEAKER_CHANGE_SHARE`` of consecutive lines. (With 4 lines and 2 changes, 4 of the Korean fact set's 427
    game days of tidy notes passed, and their context vectors cost 0.3 points R@5; none passes with 8.)
    Clients that store a dialogue's turns without naming tier ``source`` (the conversation benchmark's held-out
    mode) then get the dialogue treatment: context vectors, a repeat kept unless resent at the same moment,
    repeated lines shown once.
    """
    if min_facts <= 0 or len(facts) < min_facts:
        return False
    if not all(may_be_said(f) for f in facts):
        return False
    changes = sum(a != b for a, b in pairwise(voices(facts)))
    return changes >= SPEAKER_CHANGE_SHARE * (len(facts) - 1)


NAME_PREFIX = re.compile(r"\s*([^\s:\uff1a]{1,24}(?: [^\s:\uff1a]{1,24})?)\s*[:\uff1a]\s*\S")
"""A transcript line's speaker written into it: "Caroline: I went ...", "민수: 응 ..." (one or two words)."""

MAX_VOICES = 4
"""A transcript has a few speakers; more distinct prefixes are labels ("직업: 간호사", "취미: ...")."""


def name_prefix(content: str) -> str | None:
    """The speaker's name a transcript line starts with, if any (casefolded)."""
    found = NAME_PREFIX.match(content)
    return found.group(1).casefold() if found else None


def voices(facts: Sequence[NewMemory]) -> list[str]:
    """Who says each line: the name prefix when every line has one and they are few, else the speaker field.

    A client that stores a transcript without our speaker field sends one speaker for every line and writes
    the speaker into the text.
    """
    names = [name_prefix(f.content) for f in facts]
    if all(names) and len(set(names)) <= MAX_VOICES:
        return [n or "" for n in names]
    return [f.speaker.value for f in facts]


def may_join(facts: Sequence[NewMemory], turns: Sequence[bool], min_batch: int) -> bool:
    """Whether a request is one short line that could continue a dialogue stored turn by turn (no tier named).

    ``min_batch`` 0 turns detection off, as for batches.
    """
    if min_batch <= 0 or len(facts) != 1 or turns[0]:
        return False
    f = facts[0]
    if f.valid_at is None and name_prefix(f.content) is None:
        return False  # said now and unnamed: no stored row shares its moment (``joins_dialogue``), so no read
    return may_be_said(f)


def joins_dialogue(fact: NewMemory, previous: StoredTurn | None, now: datetime, window: timedelta,
                   same_voice: bool = True) -> bool:
    """Whether a lone line (``may_join``) is the next turn of the scope's latest row.

    It is when said within ``window`` after that row by another voice (the speaker field, or the name prefix
    when both lines have one), and the two read as one transcript: both name their speakers, or both were said
    at the same moment (a session stored line by line at its date). A game also stores tidy facts one per
    request, each at its own moment and often by turns of the player and the heroine; read as turns they
    would lose the meaning duplicate rule. The same voice again joins only at a moment where another voice
    already spoke (``moment_voices``): the heroine's second line in a row of a session stored at its date
    (``same_voice``; off, only another voice's line joins).
    """
    at = fact.valid_at or now
    if previous is None or not timedelta(0) <= at - previous.valid_at <= window:
        return False
    if not other_voice(fact.content, fact.speaker, previous.content, previous.speaker):
        return same_voice and at == previous.valid_at and previous.moment_voices
    return at == previous.valid_at or bool(name_prefix(fact.content) and name_prefix(previous.content))


def other_voice(content: str, speaker: Speaker, previous: str, previous_speaker: Speaker | None) -> bool:
    """Whether two lines have different speakers: by their name prefixes when both have one, else the field."""
    mine, theirs = name_prefix(content), name_prefix(previous)
    if mine and theirs:
        return mine != theirs
    return previous_speaker is not None and previous_speaker is not speaker


def stored_turn(content: str, speaker: Speaker, tier: Tier, previous: tuple[str, Speaker] | None,
                following: tuple[str, Speaker] | None = None) -> bool:
    """Whether a stored short row is a turn for a re-embed: a source row, or a knowledge row next to another voice.

    Next to: after a line another speaker said within the window, or before one (a dialogue request's first
    line). A dialogue request's rows and lone lines were read as
    turns at write time; that reading is not stored, so this is its approximation from the rows.
    """
    if tier is Tier.SOURCE:
        return True
    return tier is Tier.KNOWLEDGE and any(
        n is not None and other_voice(content, speaker, *n) for n in (previous, following))


def turn_flags(facts: Sequence[NewMemory], min_batch: int) -> list[bool]:
    """Which facts of a request are dialogue turns: tier source lines, or every fact of a dialogue batch."""
    if dialogue_batch(facts, min_batch):
        return [True] * len(facts)
    return [is_turn(f) for f in facts]


def first_turn_at(facts: Sequence[NewMemory], turns: Sequence[bool], now: datetime) -> datetime | None:
    """When the batch's earliest dialogue turn was said (its predecessor may be stored).

    None when no turn needs a vector made here (a caller's vector is kept as given).
    """
    if not any(t and f.embedding is None for f, t in zip(facts, turns, strict=True)):
        return None
    return min(f.valid_at or now for f, t in zip(facts, turns, strict=True) if t)


def with_previous(previous: str | None, content: str) -> str:
    """The text a turn's vector is taken over: the previous turn, a newline, the turn (or the turn alone)."""
    return f"{previous}\n{content}" if previous else content


def asks(content: str) -> bool:
    """Whether a line is a question (ends with a question mark): its answer is the turn that follows."""
    return content.rstrip().rstrip("!~.…)").endswith(("?", "\uff1f"))


ContextWhen = Literal["always", "asked", "asked-or-short"]
"""Which turns take the previous turn as context: every turn, a reply to a question, or also a short line."""

SHORT_TURN_CHARS = 16
"""A line this short ("응, 지난 화요일에!", "Sure, why not?") says little without the line before it."""


def takes_previous(previous: str, content: str, when: ContextWhen) -> bool:
    """Whether a turn is embedded over ``previous``: always, or when it answers a question (or is short).

    A line that states something itself ("난 마을 도서관에서 일해") loses its meaning under an unrelated
    previous line; a reply ("응, 지난 화요일에!") has none without its question.
    """
    if when == "always":
        return True
    return asks(previous) or (when == "asked-or-short" and len(content.strip()) <= SHORT_TURN_CHARS)


SpeakerLabel = Literal["off", "role", "name"]
"""How a turn's speaker is written before its line in the embedded text (``speaker_label``)."""

HANGUL = re.compile("[\uac00-\ud7a3]")


def speaker_label(speaker: Speaker | None, content: str, label: SpeakerLabel, heroine: str) -> str:
    """The line as embedded, its speaker written before it.

    ``role``: "나: ..." / "너: ..." (or "Me:" / "You:", by the line's script), as the player says and hears
    it; ``name``: the heroine's id for her lines. A line that names its speaker stays as it is.
    """
    if label == "off" or speaker is None or name_prefix(content) is not None:
        return content
    korean = HANGUL.search(content) is not None
    if speaker is Speaker.USER:
        who = "나" if korean else "Me"
    elif label == "name" and heroine:
        who = heroine[:1].upper() + heroine[1:]
    else:
        who = "너" if korean else "You"
    return f"{who}: {content}"


def embedding_texts(
    facts: Sequence[NewMemory], turns: Sequence[bool], now: datetime, window: timedelta, stored: StoredTurn | None,
    with_answer: bool = False, when: ContextWhen = "always", label: SpeakerLabel = "off", heroine: str = "",
) -> list[str]:
    """The text each fact's vector is taken over: a turn with its predecessor within ``window``, else the content.

    Turns are ordered by ``valid_at`` (the request's order among equal times); a turn said more than
    ``window`` after the one before it starts a new conversation and is embedded alone, and ``when``
    (``takes_previous``) picks the turns that take it. ``with_answer``: a question is also embedded with the
    next turn of the batch (its answer, when said within the window). ``label``: each turn's lines are
    written with their speaker (``speaker_label``; ``heroine`` is the scope's heroine id).
    """
    texts = [f.content for f in facts]
    if window <= timedelta(0):
        return texts
    said = [speaker_label(f.speaker, f.content, label, heroine) if t else f.content for f, t in zip(facts, turns,
                                                                                                     strict=True)]
    order = sorted((i for i, t in enumerate(turns) if t), key=lambda i: (facts[i].valid_at or now, i))
    prev = None if stored is None else replace(
        stored, content=speaker_label(stored.speaker, stored.content, label, heroine))
    for i in order:
        at = facts[i].valid_at or now
        if facts[i].embedding is None:
            texts[i] = said[i]
        if (facts[i].embedding is None and prev is not None and timedelta(0) <= at - prev.valid_at <= window
                and takes_previous(prev.content, facts[i].content, when)):
            texts[i] = with_previous(prev.content, said[i])
        prev = StoredTurn(said[i], at)
    if with_answer:
        for i, j in pairwise(order):
            gap = (facts[j].valid_at or now) - (facts[i].valid_at or now)
            if facts[i].embedding is None and asks(facts[i].content) and gap <= window:
                texts[i] = f"{texts[i]}\n{said[j]}"
    return texts


@dataclass(frozen=True)
class TurnContext:
    """The write settings that shape a turn's embedded text, for a re-embed to take the write path's text."""

    with_answer: bool = False
    when: ContextWhen = "always"
    label: SpeakerLabel = "off"


def turn_text(content: str, speaker: Speaker, previous: tuple[str, Speaker] | None,
              following: tuple[str, Speaker] | None, shape: TurnContext, heroine: str) -> str:
    """One stored turn's embedded text from its neighbours, as ``embedding_texts`` made it at write time.

    ``previous``: the line said before it within the window; ``following``: the line said after it.
    """
    said = speaker_label(speaker, content, shape.label, heroine)
    text = said
    if previous is not None and takes_previous(previous[0], content, shape.when):
        text = with_previous(speaker_label(previous[1], previous[0], shape.label, heroine), said)
    if shape.with_answer and following is not None and asks(content):
        text = f"{text}\n{speaker_label(following[1], following[0], shape.label, heroine)}"
    return text


def answered_text(stored: StoredTurn | None, facts: Sequence[NewMemory], turns: Sequence[bool], now: datetime,
                  window: timedelta, shape: TurnContext, heroine: str) -> str | None:
    """The stored question's new embedded text when this request's first turn answers it; else None.

    A question stored last in its request (one request per turn) was embedded without its answer, which a
    dialogue request gives it (``embedding_texts`` with ``with_answer``); when the answer arrives said within
    ``window``, the question takes the same text a dialogue request would have given it (``turn_text``).
    Only when the answer's vector is made here: a caller that gives vectors made the question's too.
    """
    if not shape.with_answer or stored is None or stored.id is None or stored.speaker is None:
        return None
    order = sorted((i for i, t in enumerate(turns) if t), key=lambda i: (facts[i].valid_at or now, i))
    if not order or not asks(stored.content):
        return None
    first = facts[order[0]]
    if first.embedding is not None or not timedelta(0) <= (first.valid_at or now) - stored.valid_at <= window:
        return None
    return turn_text(stored.content, stored.speaker, stored.previous, (first.content, first.speaker), shape, heroine)


REPEAT_HEADROOM = 2
"""Search asks the store for this many times ``limit`` hits when repeated turns are collapsed."""


def distinct_turns(hits: Sequence[ScoredMemory], limit: int) -> list[ScoredMemory]:
    """The hits in rank order without a dialogue turn whose text a better hit already said, cut to ``limit``.

    Any tier: the knowledge duplicate rule merges equal text, so only turns (tier source, or a dialogue batch
    stored as knowledge) and a restated line's closed history repeat. The best-ranked copy stays, which with
    context vectors is the one said in the context that fits the question.
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
