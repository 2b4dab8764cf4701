"""The conversation benchmark's data sets are what the generator makes, and the topical one keeps topics together."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.conversation import vocab_en, vocab_ko
from benchmarks.conversation.generate import DATASET, TOPICAL, generate
from benchmarks.conversation.schema import say


@pytest.mark.parametrize(("path", "topical"), [(DATASET, False), (TOPICAL, True)])
def test_data_set_is_the_generators(path: Path, topical: bool) -> None:
    """A changed generator is committed with the data sets it makes (``python -m benchmarks.conversation.generate``)."""
    assert json.loads(path.read_text(encoding="utf-8")) == generate(topical=topical)


def _facts_beside_their_topic(data: dict[str, Any]) -> tuple[int, int]:
    """How many single-turn fact turns there are, and how many have a line of their own topic just beside them."""
    facts = beside = 0
    for conv in data["conversations"]:
        name = conv["companion_name"]
        topic_of: dict[str, set[str]] = {}
        for v in (vocab_ko.VOCAB, vocab_en.VOCAB):
            for fact in v.facts:
                for line in (ln for lines in fact.lines.values() for ln in lines):
                    topic_of.setdefault(say(line, h=name), set()).update(say(c, h=name) for c in fact.chatter)
        for session in conv["sessions"]:
            texts = [t["text"] for t in session["turns"]]
            for i, text in enumerate(texts):
                if text not in topic_of or not topic_of[text]:
                    continue
                facts += 1
                near = texts[max(i - 1, 0):i] + texts[i + 1:i + 2]
                beside += any(c in near for c in topic_of[text])
    return facts, beside


def test_topical_set_says_facts_beside_their_topic() -> None:
    """Every fact of the topical set has a line of its topic beside it; the scattered set's seldom do."""
    facts, beside = _facts_beside_their_topic(generate(topical=True))
    assert facts > 50
    assert beside == facts
    facts, beside = _facts_beside_their_topic(generate())
    assert facts > 50
    assert beside < facts / 4
