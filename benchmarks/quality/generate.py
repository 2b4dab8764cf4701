"""Generate the Korean retrieval data set (deterministic): ``python -m benchmarks.quality.generate``.

Four players each talk with letia, lupames and roco (12 scopes). A scope holds the player's profile as the
heroine heard it (with preference changes over game days, some closing the old fact through its slot, some
leaving both valid so only recency tells them apart), the heroine's own facts, gossip about the other two
heroines (distractors), shared events, world news and day-to-day small talk (unimportant, often
recent, close in words to real answers). Each question lists the memories that answer it.
"""

from __future__ import annotations

import argparse
import json
import random
import string
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.quality.vocab import DAILY, EVENTS, HEROINES, NAMES, PROFILES, TOPICS, WORLD, Topic, josa

DATASET = Path(__file__).with_name("dataset.json")
PLAYERS = ("minjun", "seoyeon", "jihoon", "haeun")
START = "2025-03-01T00:00:00+00:00"
NOW_DAY = 60


class _Josa(string.Formatter):
    """``{v:을/를}`` puts the particle form that fits ``v``."""

    def format_field(self, value: Any, format_spec: str) -> str:
        return josa(str(value), format_spec) if "/" in format_spec else format(value, format_spec)


def say(template: str, **values: str) -> str:
    """Fill a template, choosing particles by the final consonant of each value."""
    return _Josa().format(template, **values)


@dataclass
class Fact:
    """One memory to store."""

    key: str
    day: float
    speaker: str
    subject: str
    subject_id: str
    content_type: str
    content: str
    importance: int
    slot: str | None = None


@dataclass
class Question:
    """A query and the keys of the memories that answer it."""

    text: str
    expected: list[str]
    kind: str


@dataclass
class ScopeData:
    """One player with one heroine."""

    user_id: str
    heroine_id: str
    facts: list[Fact] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)


def _keyword_question(rng: random.Random, topic: Topic, value: str) -> Question | None:
    if not topic.keyword_questions:
        return None
    typo = topic.typos.get(value)
    use_typo = typo is not None and rng.random() < 0.8
    text = say(rng.choice(topic.keyword_questions), v=typo if use_typo and typo else value)
    return Question(text, [], "spelling-variant" if use_typo else "keyword")


def _profile(rng: random.Random, s: ScopeData, values: dict[str, str]) -> None:
    """The player's facts as told to this heroine, with changes of mind over the game days."""
    topics = rng.sample(TOPICS, 10)
    changeable = [t for t in topics if t.change]
    rng.shuffle(changeable)
    slotted, unslotted = changeable[:2], changeable[2:3]
    for t in topics:
        key = f"{s.heroine_id}-{t.slot}"
        keep_slot = t not in unslotted
        fact = Fact(key, rng.randint(1, 35), "user", "user", "user", t.content_type, say(t.fact, v=values[t.slot]),
                    t.importance, t.slot if keep_slot else None)
        s.facts.append(fact)
        answer = [key]
        if t in slotted or t in unslotted:
            new_value = rng.choice([v for v in t.values if v != values[t.slot]])
            newer = Fact(key + "-new", rng.randint(40, 55), "user", "user", "user", t.content_type,
                         say(t.change, v=new_value), t.importance, fact.slot)
            s.facts.append(newer)
            answer = [newer.key]
            s.questions.append(Question(t.recent_question, answer,
                                        "changed-slot" if t in slotted else "changed-recency"))
            continue
        s.questions.append(Question(rng.choice(t.paraphrases), answer, "paraphrase"))
        kw = _keyword_question(rng, t, values[t.slot])
        if kw is not None:
            s.questions.append(Question(kw.text, answer, kw.kind))


def _heroines(rng: random.Random, s: ScopeData) -> None:
    """The heroine's own facts, asked about by name, and gossip about the other two as distractors."""
    h = s.heroine_id
    for i, (content, ctype, question, _kw) in enumerate(PROFILES[h]):
        key = f"{h}-self-{i}"
        s.facts.append(Fact(key, rng.randint(1, 50), "heroine", "heroine", h, ctype,
                            say("{n:은/는} ", n=NAMES[h]) + content, 5))
        s.questions.append(Question(say("{n:은/는} ", n=NAMES[h]) + question, [key], "heroine-self"))
    for other in (o for o in HEROINES if o != h):
        for i, (content, ctype, _q, _kw) in enumerate(rng.sample(PROFILES[other], 3)):
            s.facts.append(Fact(f"{other}-gossip-{i}", rng.randint(1, 50), "user", "heroine", other, ctype,
                                say("{n:은/는} ", n=NAMES[other]) + content, 4))


def _moments(rng: random.Random, s: ScopeData) -> None:
    """Shared events with the heroine and news of the world, each asked about once."""
    for i, (content, paraphrase, keyword, importance) in enumerate(rng.sample(EVENTS, 4)):
        key = f"event-{i}"
        s.facts.append(Fact(key, rng.randint(5, 55), "user", "heroine", s.heroine_id, "event",
                            say(content, h=NAMES[s.heroine_id]), importance))
        kind, text = rng.choice((("paraphrase", paraphrase), ("keyword", keyword)))
        s.questions.append(Question(text, [key], kind))
    for i, (content, paraphrase, keyword) in enumerate(rng.sample(WORLD, 3)):
        key = f"world-{i}"
        s.facts.append(Fact(key, rng.randint(1, 55), "heroine", "world", "world", "fact", content, 3))
        kind, text = rng.choice((("paraphrase", paraphrase), ("keyword", keyword)))
        s.questions.append(Question(text, [key], kind))


def _daily(rng: random.Random, s: ScopeData, count: int = 24) -> None:
    """Small talk spread over the game days: unimportant, often recent, and close in words to real answers."""
    seen: set[str] = set()
    while len(seen) < count:
        template, fillers = rng.choice(DAILY)
        content = say(template, x=rng.choice(fillers))
        if content not in seen:
            seen.add(content)
            s.facts.append(Fact(f"daily-{len(seen)}", rng.randint(1, 59), "user", "user", "user", "event",
                                content, rng.choice((2, 3))))


def generate(seed: int = 5) -> dict[str, Any]:
    """The whole data set as a JSON-ready dict."""
    rng = random.Random(seed)
    scopes: list[ScopeData] = []
    for player in PLAYERS:
        values = {t.slot: rng.choice(t.values) for t in TOPICS}
        for heroine in HEROINES:
            s = ScopeData(f"bench-{player}", heroine)
            _profile(rng, s, values)
            _heroines(rng, s)
            _moments(rng, s)
            _daily(rng, s)
            s.facts.sort(key=lambda f: f.day)
            scopes.append(s)
    return {"seed": seed, "start": START, "now_day": NOW_DAY, "scopes": [asdict(s) for s in scopes]}


def main() -> None:
    """Write the data set next to this file (or to --out)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--out", type=Path, default=DATASET)
    args = parser.parse_args()
    data = generate(args.seed)
    args.out.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    facts = sum(len(s["facts"]) for s in data["scopes"])
    questions = sum(len(s["questions"]) for s in data["scopes"])
    print(f"{args.out}: {len(data['scopes'])} scopes, {facts} facts, {questions} questions")


if __name__ == "__main__":
    main()
