"""Read-time steps for answers across turns and sessions, emulated around the service (fourth round).

    python -m benchmarks.conversation.readtime [--json out.json]

The conversations are stored as the defaults store them (write mode ``heldout-label``: no tier, one date and
one request per session, speaker labels, answers) and every question is asked through ``engine.search`` with
the defaults. Then, on the same hits:

- pseudo-relevance feedback (Rocchio) on the vector side: a second search with the vector
  normalise(q + beta * normalise(mean of the first search's top k vectors)), alone (``replace``) or fused
  with the first list by reciprocal rank (``rrf``); its latency is the second search, measured here;
- a session's match: the first search's top 100 re-ranked by ``-rank / 100 + g * cosine(question, the
  centroid of the hit's session)`` (the mean vector of the session's turns; rank, not the final score, so
  the period a question names still orders first);
- the answer pulled in: a hit whose own text is a question is followed by the turn after it in its session,
  inside the same top 10 (for every hit, or the top 5 only);
- sessions capped (seventh round): the first search's top 100 taken in order with at most ``c`` hits from any
  one session until the list is full, the skipped ones after them (turns embedded with their neighbours look
  alike, so one session can fill the top 10 where a question's answers lie in two or three).

None of these changes the service; the one that wins would be built into the search statement.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from itertools import pairwise
from typing import Any
from uuid import UUID

import numpy as np
from npc_memory.config import Config, DatabaseConfig
from npc_memory.domain.dialogue import asks
from npc_memory.domain.model import Fusion, SearchQuery, Vector, Weights
from npc_memory.engine import MemoryEngine
from npc_memory.server.runtime import open_engine

from benchmarks.conversation import metrics
from benchmarks.conversation.metrics import Answer
from benchmarks.conversation.run import Loaded, embed_turns, experiment_main, load, step_engines
from benchmarks.conversation.steps import WRITE_MODES

MODE = "heldout-label"
WIDE = 100
PRF = [(k, beta) for k in (3, 5, 10) for beta in (0.5, 1.0)]
SESSION_GAIN = (0.5, 1.0, 2.0)
SESSION_CAPS = (1, 2, 3, 4)


def unit(v: Vector) -> Vector:
    """``v`` scaled to length 1."""
    return (v / np.linalg.norm(v)).astype(np.float32)


def rrf(*lists: Sequence[UUID]) -> list[UUID]:
    """The lists fused by reciprocal rank (k 60)."""
    score: dict[UUID, float] = {}
    for ranked in lists:
        for r, m in enumerate(ranked):
            score[m] = score.get(m, 0.0) + 1.0 / (60 + r)
    return sorted(score, key=lambda m: -score[m])


def pull_answers(ranked: Sequence[UUID], text: dict[UUID, str], after: dict[UUID, UUID], top: int) -> list[UUID]:
    """Each of the first ``top`` hits that asks a question followed by the turn after it (no repeats)."""
    out: list[UUID] = []
    for r, m in enumerate(ranked):
        for x in (m, after.get(m) if r < top and asks(text.get(m, "")) else None):
            if x is not None and x not in out:
                out.append(x)
    return out


def capped(ranked: Sequence[UUID], session_of: dict[UUID, int], cap: int) -> list[UUID]:
    """``ranked`` with at most ``cap`` hits of any one session first, in order, then the hits skipped."""
    taken: dict[int, int] = {}
    first: list[UUID] = []
    rest: list[UUID] = []
    for m in ranked:
        s = session_of.get(m, -1)
        (first if taken.get(s, 0) < cap else rest).append(m)
        taken[s] = taken.get(s, 0) + 1
    return first + rest


class Collected:
    """Answers per emulated step, and the latency of the first and the feedback search."""

    def __init__(self) -> None:
        self.answers: dict[str, list[Answer]] = {}
        self.seconds: dict[str, list[float]] = {"first search": [], "feedback search": []}

    def add(self, name: str, answer: Answer) -> None:
        """Record one question's answer under an emulated step."""
        self.answers.setdefault(name, []).append(answer)


async def conversation(engine: MemoryEngine, conv: dict[str, Any], lo: Loaded, out: Collected) -> None:
    """Ask one conversation's questions and record every emulated step."""
    now = datetime.fromisoformat(conv["now"])
    text: dict[UUID, str] = {}
    after: dict[UUID, UUID] = {}
    session_of: dict[UUID, int] = {}
    members: dict[int, list[UUID]] = {}
    for s in conv["sessions"]:
        ids = [lo.memory_of[t["id"]] for t in s["turns"] if t["id"] not in lo.dropped]
        for t in s["turns"]:
            text[lo.memory_of[t["id"]]] = t["text"]
        after |= dict(pairwise(ids))
        session_of |= dict.fromkeys(ids, s["index"])
        members[s["index"]] = ids
    centroid = {i: unit(np.mean([lo.vectors[m] for m in ids], axis=0)) for i, ids in members.items() if ids}
    qvecs = await engine.embedder.embed_queries([q["text"] for q in conv["questions"]])
    for q, vec in zip(conv["questions"], qvecs, strict=True):
        evidence = [None if t in lo.dropped else lo.memory_of[t] for t in q["evidence"]]

        def answer(ranked: Sequence[UUID], q: dict[str, Any] = q, evidence: list[UUID | None] = evidence) -> Answer:
            return Answer(q["kind"], q["shape"], conv["language"], list(ranked)[:15], evidence)

        async def search(v: Vector, limit: int, q: dict[str, Any] = q) -> tuple[list[UUID], float]:
            started = time.perf_counter()
            hits = await engine.search(SearchQuery(
                scope=lo.scope, text=q["text"], limit=limit, weights=Weights(), now=now, fusion=Fusion.WEIGHTED,
                embedding=v, recency_days=engine.search_settings.recency_days_for(lo.scope.heroine_id)))
            return [h.memory.id for h in hits], time.perf_counter() - started

        first, seconds = await search(vec, 15)
        out.seconds["first search"].append(seconds)
        out.add("defaults", answer(first))
        for k, beta in PRF:
            moved = unit(vec + beta * unit(np.mean([lo.vectors[m] for m in first[:k]], axis=0)))
            second, seconds = await search(moved, 15)
            out.seconds["feedback search"].append(seconds)
            out.add(f"feedback k {k} beta {beta}, replace", answer(second))
            out.add(f"feedback k {k} beta {beta}, rrf", answer(rrf(first, second)))
        wide, _ = await search(vec, WIDE)
        for g in SESSION_GAIN:
            raised = {m: -r / WIDE + g * float(np.dot(vec, centroid[session_of[m]])) for r, m in enumerate(wide)}
            out.add(f"session match, gain {g}", answer(sorted(raised, key=lambda m: -raised[m])))
        for c in SESSION_CAPS:
            out.add(f"at most {c} per session", answer(capped(wide, session_of, c)))
        out.add("answer pulled, every question hit", answer(pull_answers(first, text, after, 15)))
        out.add("answer pulled, top 5 question hits", answer(pull_answers(first, text, after, 5)))


async def stored_as_defaults(engine: MemoryEngine, data: dict[str, Any],
                             prefix: str) -> tuple[MemoryEngine, list[tuple[dict[str, Any], Loaded]]]:
    """Every conversation stored as the defaults store it (``MODE``), and the engine that asks as they do."""
    vectors = await embed_turns(engine, data)
    writer = replace(engine, write_settings=WRITE_MODES[MODE])
    asked = step_engines(engine, ["heldout+label"])[0].engine
    return asked, [(conv, await load(writer, conv, vectors, prefix, MODE)) for conv in data["conversations"]]


async def run(url: str, data: dict[str, Any]) -> dict[str, Any]:
    """Store the conversations as the defaults do, then ask and emulate every step."""
    async with open_engine(Config(database=DatabaseConfig(url=url, pool_min=1, pool_max=2))) as engine:
        asked, loaded = await stored_as_defaults(engine, data, "readtime:")
        out = Collected()
        for conv, lo in loaded:
            await conversation(asked, conv, lo, out)
    figures = {name: metrics.figures(a) for name, a in out.answers.items()}
    return {"figures": figures, "latency_ms": {name: {"p50": 1000 * float(np.percentile(s, 50)),
                                                      "p95": 1000 * float(np.percentile(s, 95))}
                                               for name, s in out.seconds.items()}}


def report(results: dict[str, Any]) -> str:
    """R@10 overall and by the kinds the steps aim at; the latency of the first and the feedback search."""
    lines = ["| emulated step (R@10) | all | multi | pairs | across sessions | single | time | update |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, f in results["figures"].items():
        cells = [f["all"]["R@10"], f["by_kind"]["multi"]["R@10"], f["by_shape"]["multi/pair"]["R@10"],
                 f["by_shape"]["multi/sessions"]["R@10"], f["by_kind"]["single"]["R@10"],
                 f["by_kind"]["time"]["R@10"], f["by_kind"]["update"]["R@10"]]
        lines.append(f"| {name} | " + " | ".join(f"{c:.3f}" for c in cells) + " |")
    lines += ["", *(f"{name}: p50 {v['p50']:.1f} ms, p95 {v['p95']:.1f} ms"
                    for name, v in results["latency_ms"].items())]
    return "\n".join(lines)


def main() -> None:
    """Run against a temporary embedded PostgreSQL and print the table."""
    experiment_main(__doc__ or "", "npc-readtime-", run, report)


if __name__ == "__main__":
    main()
