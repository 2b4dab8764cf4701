"""The conversation benchmark's steps: service settings measured one after another, and the write modes.

Used by ``python -m benchmarks.conversation.run --steps ...`` (docs/conversation-benchmark.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from npc_memory.config import PeriodSearch, SearchConfig, WriteConfig
from npc_memory.text import PLAIN, TextOptions

OLD_HALF_LIFE = 30.0 * math.log(2)
"""The recency half-life before the archive step (days): exp(-age / 30 days)."""


@dataclass(frozen=True)
class StepSettings:
    """How the turns are stored and the service settings the questions are asked under."""

    write: str
    """``knowledge``: tier knowledge, the turn's own vector (the knowledge duplicate rule, no context);
    ``source``: tier source, the turn's own vector given; ``context``: tier source, the service embeds it
    (with the previous turn, domain/dialogue.py); ``heldout``: as the held-out benchmark stores a conversation
    (no tier named, so knowledge; every turn of a session at the session's date; no vector given), the service's
    defaults; ``heldout-off``: the same with ``dialogue_batch_min`` 0 (no request read as a dialogue);
    ``heldout-names[-off]``: held-out storing with one speaker for every line and "Name: text" content;
    ``heldout-single[-off]``: held-out storing, one request per turn (``-answered``: a question re-embedded with
    the answer a later request brings, ``-label``: without; ``-voices``: also a speaker's second line in a
    row joins, ``dialogue_same_voice``; ``-repeats``: also a session's first line that repeats a dialogue's line,
    ``dialogue_repeated_lines``); ``asked``/``asked-short``/``label-*``:
    as ``answer`` with ``dialogue_context_when`` / ``dialogue_speaker_label`` set (``WRITE_MODES``)."""
    options: TextOptions
    period: PeriodSearch
    distinct: bool = False
    """``distinct_turns``: a line said many times shows once per search."""
    half_life_days: float = OLD_HALF_LIFE
    session_cap: int = 0
    """``session_cap``: hits of one session in a page before other sessions' hits come first (0: off)."""


_QW = PLAIN
"""The text options of every step before the English and honorific ones (the defaults of the time)."""
STEPS: dict[str, StepSettings] = {
    "base": StepSettings("knowledge", replace(PLAIN, question_words=False), "off"),
    "+qw": StepSettings("knowledge", _QW, "off"),
    "+period-cand": StepSettings("knowledge", _QW, "candidates"),
    "+period-first": StepSettings("knowledge", _QW, "first"),
    "+turn-dedup": StepSettings("source", _QW, "first"),
    "+distinct-turns": StepSettings("source", _QW, "first", True),
    "+context": StepSettings("context", _QW, "first", True),
    "+half-life": StepSettings("context", _QW, "first", True, SearchConfig.recency_half_life_days),
    "heldout-before": StepSettings("heldout-off", _QW, "first", True, SearchConfig.recency_half_life_days),
    "heldout": StepSettings("heldout", _QW, "first", True, SearchConfig.recency_half_life_days),
    "+answer": StepSettings("answer", _QW, "first", True, SearchConfig.recency_half_life_days),
    "heldout+answer": StepSettings("heldout-answer", _QW, "first", True, SearchConfig.recency_half_life_days),
    "+cap2": StepSettings("answer", _QW, "first", True, SearchConfig.recency_half_life_days, 2),
    "+cap3": StepSettings("answer", _QW, "first", True, SearchConfig.recency_half_life_days, 3),
    "+asked": StepSettings("asked", _QW, "first", True, SearchConfig.recency_half_life_days),
    "+asked-short": StepSettings("asked-short", _QW, "first", True, SearchConfig.recency_half_life_days),
    "heldout-names-before": StepSettings("heldout-names-off", _QW, "first", True, SearchConfig.recency_half_life_days),
    "heldout-names": StepSettings("heldout-names", _QW, "first", True, SearchConfig.recency_half_life_days),
    "heldout-single-before": StepSettings("heldout-single-off", _QW, "first", True,
                                          SearchConfig.recency_half_life_days),
    "heldout-single": StepSettings("heldout-single", _QW, "first", True, SearchConfig.recency_half_life_days),
    "+label-role": StepSettings("label-role", _QW, "first", True, SearchConfig.recency_half_life_days),
    "+label-name": StepSettings("label-name", _QW, "first", True, SearchConfig.recency_half_life_days),
    "heldout+label": StepSettings("heldout-label", _QW, "first", True, SearchConfig.recency_half_life_days),
    "heldout-single+label": StepSettings("heldout-single-label", _QW, "first", True,
                                         SearchConfig.recency_half_life_days),
    "heldout-single+answer-later": StepSettings("heldout-single-answered", _QW, "first", True,
                                                SearchConfig.recency_half_life_days),
    "heldout-single+same-voice": StepSettings("heldout-single-voices", _QW, "first", True,
                                              SearchConfig.recency_half_life_days),
    "heldout-single+repeats": StepSettings("heldout-single-repeats", _QW, "first", True,
                                           SearchConfig.recency_half_life_days),
    "heldout+cap2": StepSettings("heldout-answer", _QW, "first", True, SearchConfig.recency_half_life_days, 2),
    "heldout+latin": StepSettings("heldout-label-latin", replace(_QW, stem_latin=True), "first", True,
                                  SearchConfig.recency_half_life_days),
    "heldout+function-words": StepSettings("heldout-label-function", replace(_QW, stem_latin=True, function_words=True),
                                           "first", True, SearchConfig.recency_half_life_days),
    "heldout+honorifics": StepSettings("heldout-label-honorifics", replace(_QW, stem_latin=True, honorifics=True),
                                       "first", True, SearchConfig.recency_half_life_days),
}
"""Service settings measured one after another (cumulative). Steps with the same ``write`` share stored rows;
each write mode stores the conversations once more (under its own user ids). The last step is the defaults."""


_PLAIN = WriteConfig(dialogue_batch_min=8, dialogue_context_answer=False, dialogue_context_when="always",
                     dialogue_speaker_label="off", dialogue_same_voice=False, dialogue_repeated_lines=False)
WRITE_MODES = {"knowledge": replace(_PLAIN, dialogue_batch_min=0), "context": _PLAIN, "heldout": _PLAIN,
               "heldout-off": replace(_PLAIN, dialogue_batch_min=0),
               "answer": replace(_PLAIN, dialogue_context_answer=True),
               "heldout-answer": replace(_PLAIN, dialogue_context_answer=True),
               "heldout-names-off": replace(_PLAIN, dialogue_batch_min=0, dialogue_context_answer=True),
               "heldout-names": replace(_PLAIN, dialogue_context_answer=True),
               "heldout-single-off": replace(_PLAIN, dialogue_batch_min=0, dialogue_context_answer=True),
               "heldout-single": replace(_PLAIN, dialogue_context_answer=True),
               "label-role": replace(_PLAIN, dialogue_context_answer=True, dialogue_speaker_label="role"),
               "label-name": replace(_PLAIN, dialogue_context_answer=True, dialogue_speaker_label="name"),
               "heldout-label": replace(_PLAIN, dialogue_context_answer=True, dialogue_speaker_label="name"),
               # Answers off: as every one-line request was embedded before a later answer re-embedded its question.
               "heldout-single-label": replace(_PLAIN, dialogue_speaker_label="name"),
               "heldout-single-answered": replace(_PLAIN, dialogue_context_answer=True, dialogue_speaker_label="name"),
               "heldout-single-voices": replace(_PLAIN, dialogue_context_answer=True, dialogue_speaker_label="name",
                                                dialogue_same_voice=True),
               "heldout-single-repeats": replace(_PLAIN, dialogue_context_answer=True, dialogue_speaker_label="name",
                                                 dialogue_same_voice=True, dialogue_repeated_lines=True),
               "asked": replace(_PLAIN, dialogue_context_answer=True, dialogue_context_when="asked"),
               "asked-short": replace(_PLAIN, dialogue_context_answer=True, dialogue_context_when="asked-or-short")}
"""Write settings of the modes whose vectors the service makes, spelled out (not the defaults of the day)."""
WRITE_TEXT = {step.write: step.options for step in STEPS.values() if step.write.startswith("heldout-label-")}
"""Modes that store their turns' terms with other text options than the defaults (the step's own)."""
WRITE_MODES.update(dict.fromkeys(WRITE_TEXT, WRITE_MODES["heldout-label"]))
