"""Generate the conversation data set (deterministic): ``python -m benchmarks.conversation.generate``.

Each conversation is a player talking with one companion over dozens of dated sessions: mostly small talk,
with facts, dated events, question-and-reply pairs and changes of mind scattered through it. Every
question lists the turns that answer it (its evidence) and its kind: ``single`` (one turn), ``multi``
(a question turn and its reply, or turns in several sessions), ``time`` (a period in the question, or
"when did ..."), ``update`` (a changed preference: the newer turn answers) and ``adversarial`` (never said:
no evidence).

Two data sets come from the generator. ``dataset.json`` scatters each fact's topic talk (its ``chatter``) through
the conversation, so a fact's neighbours are small talk about nothing it holds. ``dataset_topical.json``
(``--topical``) is drawn afresh by the same generator (the same kinds of facts and questions) with one of those
topic lines said just before or after the fact it belongs to, as people talk: a turn's neighbours then carry its
topic, which the scattered set cannot show.
"""

from __future__ import annotations

import argparse
import json
import random
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.conversation import vocab_en, vocab_ko
from benchmarks.conversation.schema import Companion, EventKind, Periods, Vocab, say

DATASET = Path(__file__).with_name("dataset.json")
TOPICAL = Path(__file__).with_name("dataset_topical.json")
START = date(2024, 5, 6)
SESSION_HOUR = 20  # sessions are evenings; turns a minute apart

# (conversation id, player, companion id, vocabulary, companions of that vocabulary)
CONVERSATIONS: tuple[tuple[str, str, str, Vocab, dict[str, Companion]], ...] = (
    ("ko-letia-minjun", "bench-minjun", "letia", vocab_ko.VOCAB, vocab_ko.COMPANIONS),
    ("ko-lupames-seoyeon", "bench-seoyeon", "lupames", vocab_ko.VOCAB, vocab_ko.COMPANIONS),
    ("ko-roco-jihoon", "bench-jihoon", "roco", vocab_ko.VOCAB, vocab_ko.COMPANIONS),
    ("ko-letia-haeun", "bench-haeun", "letia", vocab_ko.VOCAB, vocab_ko.COMPANIONS),
    ("en-mara-alex", "bench-alex", "mara", vocab_en.VOCAB, vocab_en.COMPANIONS),
    ("en-theo-sam", "bench-sam", "theo", vocab_en.VOCAB, vocab_en.COMPANIONS),
    ("en-iris-jordan", "bench-jordan", "iris", vocab_en.VOCAB, vocab_en.COMPANIONS),
)
EVENTS_PER_KIND = {"trip": 3, "meal": 3, "show": 2, "sick": 2, "gift": 2, "buy": 2}
# Topics that tell the same thing: a conversation with one of them cannot ask the other as never said.
OVERLAPS = {"town": "moving"}

Line = tuple[str, str, str | None]
"""(speaker "user"/"companion", text, evidence label or None)."""


@dataclass
class Turn:
    """One line of dialogue."""

    id: str
    speaker: str
    text: str


@dataclass
class Session:
    """One dated sitting."""

    index: int
    date: str
    turns: list[Turn] = field(default_factory=list)


@dataclass
class Question:
    """A question, its kind and shape, and the turns that answer it (``stale``: the older, replaced turns)."""

    id: str
    text: str
    kind: str
    shape: str
    topic: str
    evidence: list[str]
    stale: list[str] = field(default_factory=list)


@dataclass
class _Pending:
    text: str
    kind: str
    shape: str
    topic: str
    labels: list[str]
    stale: list[str] = field(default_factory=list)


@dataclass
class _Plan:
    """Content blocks by session, and questions that refer to them by label."""

    sessions: int
    dates: list[datetime]
    blocks: list[list[list[Line]]]
    questions: list[_Pending] = field(default_factory=list)
    told: set[str] = field(default_factory=set)
    topical: random.Random | None = None
    """Set for the topical data set: its own draws (where a topic line goes), so the shared draw stays the same."""

    def put(self, block: list[Line], session: int) -> None:
        self.blocks[session].append(block)

    def ask(self, text: str, kind: str, shape: str, topic: str, labels: list[str], stale: list[str] | None = None,
            ) -> None:
        self.questions.append(_Pending(text, kind, shape, topic, labels, stale or []))


def _facts(rng: random.Random, v: Vocab, plan: _Plan, companion: Companion) -> None:
    """Single-turn facts of the player and the companion; never-said questions about the rest."""
    used = rng.sample(v.facts, rng.randint(9, 11))
    unused = [f for f in v.facts if f not in used]
    decoys: list[str] = []
    for fact in used:
        value = rng.choice(list(fact.lines))
        label = f"fact:{fact.key}"
        told: list[Line] = [("user", say(rng.choice(fact.lines[value]), h=companion.name), label)]
        session = rng.randrange(plan.sessions)
        if plan.topical is None:
            plan.put(told, session)
        for text in rng.sample(fact.questions, 2 if rng.random() < 0.4 else 1):
            plan.ask(say(text, h=companion.name), "single", "turn", fact.key, [label])
        for k, line in enumerate(rng.sample(fact.chatter, min(len(fact.chatter), 2))):
            topic: Line = (rng.choice(("user", "companion")), say(line, h=companion.name), None)
            where = rng.randrange(plan.sessions)
            if plan.topical is not None and k == 0:  # the topic line beside its fact, before or after it
                told = [topic, *told] if plan.topical.random() < 0.5 else [*told, topic]
            else:
                plan.put([topic], where)
        if plan.topical is not None:
            plan.put(told, session)
        others = [o for o in fact.lines if o != value]
        decoys += [say(d, o=rng.choice(others), h=companion.name) for d in fact.decoys]
    for i, (line, question) in enumerate(companion.facts):
        label = f"self:{i}"
        plan.put([("companion", line, label)], rng.randrange(plan.sessions))
        plan.ask(say(question, h=companion.name), "single", "companion", f"self-{i}", [label])
    never = [say(rng.choice(f.questions), h=companion.name) for f in unused]
    for fact in unused:  # the topic comes up without the fact being told
        if fact.chatter and rng.random() < 0.5:
            plan.put([("user", say(rng.choice(fact.chatter), h=companion.name), None)], rng.randrange(plan.sessions))
    picks = rng.sample(never, min(3, len(never))) + rng.sample(decoys, min(3, len(decoys)))
    picks += [say(t, h=companion.name) for t in rng.sample(companion.never, 2)]
    for text in picks:
        plan.ask(text, "adversarial", "never", "never", [])


def _pairs(rng: random.Random, v: Vocab, plan: _Plan, companion: Companion) -> None:
    """Facts told as the companion's question and a reply that needs it."""
    for pair in rng.sample(v.pairs, rng.randint(5, 6)):
        label = f"pair:{pair.key}"
        plan.told.add(pair.key)
        plan.put([("companion", say(rng.choice(pair.asks), h=companion.name), label),
                  ("user", rng.choice(pair.replies), label)], rng.randrange(plan.sessions))
        plan.ask(say(rng.choice(pair.questions), h=companion.name), "multi", "pair", pair.key, [label])


def _period_keys(day: date, now: date) -> list[tuple[str, tuple[int, ...]]]:
    """The periods a day falls in, most specific first: last calendar week, last month, its month."""
    keys: list[tuple[str, tuple[int, ...]]] = []
    week_start = now - timedelta(days=now.weekday())
    if week_start - timedelta(days=7) <= day < week_start:
        keys.append(("last_week", ()))
    last_month = (now.year, now.month - 1) if now.month > 1 else (now.year - 1, 12)
    if (day.year, day.month) == last_month:
        keys.append(("last_month", ()))
    if (day.year, day.month) != (now.year, now.month):
        keys.append(("month", (day.year, day.month)))
    return keys


def _period_text(p: Periods, key: tuple[str, tuple[int, ...]], now: date) -> str:
    name, args = key
    if name == "last_week":
        return p.last_week
    if name == "last_month":
        return p.last_month
    year, month = args
    m = p.month_names[month - 1] if p.month_names else str(month)
    return (p.month_this_year if year == now.year else p.month_last_year).format(m=m)


def _events(rng: random.Random, v: Vocab, plan: _Plan, companion: Companion, now: date) -> None:
    """Dated events: asked by a period in the question, by "when", and all of a kind at once."""
    for kind in v.events:
        count = min(EVENTS_PER_KIND.get(kind.key, 2), len(kind.lines))
        values = rng.sample(list(kind.lines), count)
        sessions = sorted(rng.sample(range(plan.sessions), count))
        labels = [f"event:{kind.key}:{i}" for i in range(count)]
        days = [plan.dates[s].date() for s in sessions]
        for i, (value, session, label) in enumerate(zip(values, sessions, labels, strict=True)):
            if kind.when_asks and rng.random() < 0.4:
                plan.put([("companion", say(rng.choice(kind.when_asks), v=value, h=companion.name), label),
                          ("user", rng.choice(kind.when_replies), label)], session)
                plan.ask(say(rng.choice(kind.when_questions), v=value, h=companion.name), "time", "when",
                         kind.key, [label])
            else:
                plan.put([("user", say(rng.choice(kind.lines[value]), h=companion.name), label)], session)
            _ask_period(rng, v, plan, kind, companion, now, days, i, label)
        if count >= 2:
            plan.ask(say(rng.choice(kind.all_questions), h=companion.name), "multi", "sessions", kind.key, labels)


def _ask_period(rng: random.Random, v: Vocab, plan: _Plan, kind: EventKind, companion: Companion, now: date,
                days: list[date], i: int, label: str) -> None:
    """A question naming the period of event ``i``, if some period holds no other event of its kind."""
    others = [d for j, d in enumerate(days) if j != i]
    unique = [k for k in _period_keys(days[i], now) if all(k not in _period_keys(d, now) for d in others)]
    if not unique or rng.random() < 0.25:
        return
    key = unique[0] if rng.random() < 0.6 else rng.choice(unique)
    period = _period_text(v.periods, key, now)
    plan.ask(say(rng.choice(kind.period_questions), p=period, h=companion.name), "time", "period", kind.key,
             [label])


def _changes(rng: random.Random, v: Vocab, plan: _Plan, companion: Companion) -> None:
    """A preference told in the first third and changed in the second half; one never-said question."""
    used = rng.sample(v.changes, rng.randint(4, 5))
    third = plan.sessions // 3
    for change in used:
        old, new = rng.sample(change.values, 2)
        before, after = f"change:{change.key}:old", f"change:{change.key}:new"
        plan.put([("user", say(rng.choice(change.before), v=old, h=companion.name), before)], rng.randrange(third))
        plan.put([("user", say(rng.choice(change.after), v=new, old=old, h=companion.name), after)],
                 rng.randrange(plan.sessions // 2, plan.sessions))
        plan.ask(say(rng.choice(change.questions), h=companion.name), "update", "newer", change.key, [after], [before])
    unused = [c for c in v.changes if c not in used and OVERLAPS.get(c.key) not in plan.told]
    if unused:
        plan.ask(say(rng.choice(rng.choice(unused).questions), h=companion.name), "adversarial", "never", "never",
                 [])


def _session_lines(rng: random.Random, v: Vocab, blocks: list[list[Line]], companion: Companion) -> list[Line]:
    """Greeting, the session's blocks each among small talk, filler up to a dozen-odd turns, goodbye."""
    small = v.small
    opener = rng.choice(companion.openers) if companion.openers and rng.random() < 0.5 else None
    greet = rng.choice(small.openers)
    lines: list[Line] = [("companion", say(opener or greet[0], h=companion.name), None), ("user", greet[1], None)]

    def filler() -> list[Line]:
        draw = rng.random()
        if draw < 0.2:
            ask, reply = rng.choice(small.pairs)
            return [("companion", ask, None), ("user", reply, None)]
        speaker = "companion" if lines[-1][0] == "user" else "user"
        if draw < 0.85:  # a day-to-day line: words of its own, about nothing asked
            days = small.user_days if speaker == "user" else small.other_days
            line = small.day_line.format(t=rng.choice(small.times), a=rng.choice(days), f=rng.choice(small.feelings))
            return [(speaker, line.strip(), None)]
        return [(speaker, rng.choice(small.user if speaker == "user" else small.other), None)]

    rng.shuffle(blocks)
    target = rng.randint(13, 20)
    spare = max(0, target - 4 - sum(len(b) for b in blocks))
    for block in blocks:
        for _ in range(rng.randint(0, max(0, min(2, spare)))):
            part = filler()
            spare -= len(part)
            lines += part
        lines += block
        if rng.random() < 0.4:  # a reaction to what was just said
            speaker = "companion" if block[-1][0] == "user" else "user"
            lines.append((speaker, rng.choice(small.user if speaker == "user" else small.other), None))
    while len(lines) < target - 2:
        lines += filler()
    if rng.random() < 0.4:  # sessions often just stop
        return lines
    bye = rng.choice(small.closers)
    return [*lines, ("user", bye[0], None), ("companion", bye[1], None)]


def conversation(rng: random.Random, conv_id: str, user_id: str, companion_id: str, v: Vocab,
                 companion: Companion, topical: random.Random | None = None) -> dict[str, Any]:
    """One conversation as a JSON-ready dict; ``topical``: each fact with one of its topic lines beside it."""
    count = rng.randint(36, 42)
    day = START + timedelta(days=rng.randrange(7))
    dates = []
    for _ in range(count):
        dates.append(datetime(day.year, day.month, day.day, SESSION_HOUR, tzinfo=UTC))
        day += timedelta(days=rng.randint(5, 11))
    now = dates[-1] + timedelta(days=1)
    plan = _Plan(count, dates, [[] for _ in range(count)], topical=topical)
    _facts(rng, v, plan, companion)
    _pairs(rng, v, plan, companion)
    _events(rng, v, plan, companion, now.date())
    _changes(rng, v, plan, companion)
    sessions: list[Session] = []
    turns_of: dict[str, list[str]] = {}
    for i, blocks in enumerate(plan.blocks):
        session = Session(i + 1, dates[i].isoformat())
        for j, (speaker, text, label) in enumerate(_session_lines(rng, v, blocks, companion)):
            turn = Turn(f"{conv_id}:s{i + 1:02d}:t{j + 1:02d}", speaker, text)
            session.turns.append(turn)
            if label:
                turns_of.setdefault(label, []).append(turn.id)
        sessions.append(session)
    questions = [
        Question(f"{conv_id}:q{n + 1:03d}", q.text, q.kind, q.shape, q.topic,
                 [t for label in q.labels for t in turns_of[label]], [t for label in q.stale for t in turns_of[label]])
        for n, q in enumerate(plan.questions)
    ]
    return {
        "id": conv_id, "language": v.language, "user_id": user_id, "companion_id": companion_id,
        "companion_name": companion.name, "now": now.isoformat(),
        "sessions": [asdict(s) for s in sessions], "questions": [asdict(q) for q in questions],
    }


def generate(seed: int = 11, topical: bool = False) -> dict[str, Any]:
    """The whole data set as a JSON-ready dict (``topical``: the topical data set of the same draw)."""
    rng = random.Random(seed)
    beside = random.Random(seed + 1) if topical else None
    conversations = [conversation(rng, cid, user, comp, v, companions[comp], beside)
                     for cid, user, comp, v, companions in CONVERSATIONS]
    return {"seed": seed, "conversations": conversations} | ({"topical": True} if topical else {})


def main() -> None:
    """Write the data set next to this file (or to --out) and print its size."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--topical", action="store_true", help=f"the topical data set (default out: {TOPICAL.name})")
    parser.add_argument("--out", type=Path, help=f"where to write (default {DATASET.name} beside this file)")
    args = parser.parse_args()
    data = generate(args.seed, args.topical)
    args.out = args.out or (TOPICAL if args.topical else DATASET)
    args.out.write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")
    convs = data["conversations"]
    turns = sum(len(s["turns"]) for c in convs for s in c["sessions"])
    sessions = sum(len(c["sessions"]) for c in convs)
    kinds: dict[str, int] = {}
    for c in convs:
        for q in c["questions"]:
            kinds[q["kind"]] = kinds.get(q["kind"], 0) + 1
    print(f"{args.out}: {len(convs)} conversations, {sessions} sessions, {turns} turns, "
          f"{sum(kinds.values())} questions {kinds}, {args.out.stat().st_size / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
