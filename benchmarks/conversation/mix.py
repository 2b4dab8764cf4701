"""A learned mix of the score's components, fitted on our own data and cross-validated against the defaults.

    python -m benchmarks.conversation.mix [--json out.json]

Both benchmarks are stored as the defaults store them: the conversations in the held-out style (a session per
request, speaker labels, answers; as ``benchmarks.conversation.readtime``) and the Korean fact set
(``benchmarks.quality``). For every question the service's candidate union is fetched unranked
(``benchmarks.candidates``) and each candidate's components computed as the statement computes them
(``npc_memory.domain.scoring``): recency, importance, relevance (min-max over the candidates), keyword. Two
more are offered to the fit: the raw cosine (clipped), and the relevance of the line embedded alone (its speaker
label and its own words, without the turn before it; min-max) — what a second vector per turn would give.

Every weight vector of a grid over the simplex ranks every question as the service would (the period a question
names first, ties to the newer memory, a repeated line shown once), so recall is known for every weight vector
at once. The fit picks the weights with the best conversation R@10 + Korean R@5 on three folds and is scored on
the fourth (folds by conversation and by scope, so no scope is on both sides); the defaults are scored on the same
folds. Two grids: the service's four components (step 0.05), and all six (step 0.1).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any
from uuid import UUID

import numpy as np
from npc_memory.config import Config, DatabaseConfig
from npc_memory.domain.dialogue import speaker_label
from npc_memory.domain.model import SearchQuery, Speaker, Vector, Weights
from npc_memory.domain.write_rules import content_key
from npc_memory.engine import MemoryEngine
from npc_memory.server.runtime import open_engine

from benchmarks.candidates import Candidate, components, minmax, search_candidates
from benchmarks.conversation.readtime import MODE
from benchmarks.conversation.run import experiment_main, load, step_engines
from benchmarks.conversation.steps import WRITE_MODES
from benchmarks.quality import run as quality
from benchmarks.quality.generate import DATASET as FACTS

COMPONENTS = ("recency", "importance", "relevance", "keyword", "raw cosine", "relevance of the line alone")
GRIDS = {"the four components": (4, 0.05), "six components": (6, 0.1)}
FOLDS = 4
DEFAULTS = np.array([Weights().recency, Weights().importance, Weights().relevance, Weights().keyword])


@dataclass(frozen=True)
class Question:
    """One question's candidates as the fit sees them."""

    features: np.ndarray
    """candidates x COMPONENTS"""
    first: np.ndarray
    """1 for a candidate inside the period the question names (ranked first), else 0"""
    tie: np.ndarray
    """each candidate's place in the tie order (newer first, then id)"""
    keys: list[str] | None
    """each candidate's line, for showing a repeated line once (None: facts, never collapsed)"""
    ids: list[UUID]
    evidence: list[UUID | None]
    group: str


def features(cands: Sequence[Candidate], query: SearchQuery, alone: Sequence[float] | None) -> np.ndarray:
    """The components of every candidate, as the statement computes them, and the two extra ones."""
    cosines = [c.cosine for c in cands]
    base = components(cands, query)
    return np.column_stack([base[:, 0], base[:, 1], minmax(cosines), base[:, 3], np.clip(cosines, 0.0, 1.0),
                            minmax(list(alone) if alone is not None else cosines)])


def question(cands: Sequence[Candidate], query: SearchQuery, evidence: list[UUID | None], group: str,
             alone: Sequence[float] | None, collapse: bool) -> Question:
    """A question's fit input from its candidate union."""
    first = np.zeros(len(cands))
    if query.period is not None and query.period_first:
        first = np.array([query.period[0] <= c.memory.valid_at < query.period[1] for c in cands], dtype=float)
    order = sorted(range(len(cands)), key=lambda i: (-cands[i].memory.valid_at.timestamp(), str(cands[i].memory.id)))
    tie = np.empty(len(cands))
    tie[order] = np.arange(len(cands))
    keys = [content_key(c.memory.content) for c in cands] if collapse else None
    return Question(features(cands, query, alone), first, tie, keys, [c.memory.id for c in cands], evidence, group)


async def conversations(engine: MemoryEngine, data: dict[str, Any]) -> list[Question]:
    """Store the conversations as the defaults do; each question's candidates, with the lines' own vectors."""
    writer = replace(engine, write_settings=WRITE_MODES[MODE])
    asked = step_engines(engine, ["heldout+label"])[0].engine
    out: list[Question] = []
    for conv in data["conversations"]:
        turns = [t for s in conv["sessions"] for t in s["turns"]]
        lines = [speaker_label(Speaker.USER if t["speaker"] == "user" else Speaker.HEROINE, t["text"], "name",
                               conv["companion_id"]) for t in turns]
        alone = dict(zip([t["id"] for t in turns], await engine.embedder.embed_passages(lines), strict=True))
        lo = await load(writer, conv, alone, "mix:", MODE)
        alone_of: dict[UUID, Vector] = {lo.memory_of[tid]: v for tid, v in alone.items() if tid not in lo.dropped}
        now = datetime.fromisoformat(conv["now"])
        vectors = await engine.embedder.embed_queries([q["text"] for q in conv["questions"]])
        for q, vec in zip(conv["questions"], vectors, strict=True):
            if not q["evidence"]:
                continue  # never said: no recall to fit
            query = asked.with_period(SearchQuery(
                scope=lo.scope, text=q["text"], limit=10, weights=Weights(), now=now, embedding=vec,
                recency_days=asked.search_settings.recency_days_for(lo.scope.heroine_id)))
            cands = await search_candidates(asked.db, query, asked._keyword_terms(query),
                                            asked.search_settings.candidates)
            own = [float(np.dot(vec, alone_of[c.memory.id])) if c.memory.id in alone_of else c.cosine for c in cands]
            evidence = [None if t in lo.dropped else lo.memory_of[t] for t in q["evidence"]]
            out.append(question(cands, query, evidence, conv["user_id"], own, collapse=True))
    return out


async def facts(engine: MemoryEngine, data: dict[str, Any]) -> list[Question]:
    """The Korean fact set stored as benchmarks.quality stores it; each question's candidates."""
    ids = await quality.load(engine, data)
    return [question(a.candidates, a.query, list(a.expected), a.query.scope.user_id + "/" + a.query.scope.heroine_id,
                     None, collapse=False) for a in await quality.gather(engine, data, ids)]


def simplex(dims: int, step: float) -> np.ndarray:
    """Every weight vector of ``dims`` non-negative multiples of ``step`` summing to 1."""
    n = round(1 / step)
    rows = [np.diff([-1, *c, n + dims - 1]) - 1 for c in itertools.combinations(range(n + dims - 1), dims - 1)]
    return np.array(rows, dtype=float) / n


def recall(questions: Sequence[Question], weights: np.ndarray, k: int) -> np.ndarray:
    """Per question (rows) and weight vector (columns): the share of the evidence in the top ``k``."""
    out = np.zeros((len(questions), len(weights)))
    for qi, q in enumerate(questions):
        n = len(q.ids)
        score = weights @ q.features[:, :weights.shape[1]].T + 10.0 * q.first  # the period's memories first
        order = np.lexsort((np.broadcast_to(q.tie, score.shape), -score), axis=1)
        place = np.empty_like(order)
        np.put_along_axis(place, order, np.broadcast_to(np.arange(n), score.shape), axis=1)
        shown = np.ones(score.shape, dtype=bool)  # a repeated line: only its best-placed copy is shown
        for members in _repeats(q.keys):
            shown[:, members] = place[:, members] == place[:, members].min(axis=1, keepdims=True)
        where = {m: i for i, m in enumerate(q.ids)}
        for e in q.evidence:
            i = where.get(e) if e is not None else None
            if i is not None:
                above = ((place < place[:, [i]]) & shown).sum(axis=1)
                out[qi] += (shown[:, i] & (above < k)) / len(q.evidence)
    return out


def _repeats(keys: list[str] | None) -> list[list[int]]:
    groups: dict[str, list[int]] = {}
    for i, key in enumerate(keys or []):
        groups.setdefault(key, []).append(i)
    return [m for m in groups.values() if len(m) > 1]


def folds(questions: Sequence[Question]) -> np.ndarray:
    """Each question's fold: whole conversations or scopes go to one fold."""
    groups = sorted({q.group for q in questions})
    return np.array([groups.index(q.group) % FOLDS for q in questions])


def cross_validate(conv: Sequence[Question], kor: Sequence[Question], dims: int, step: float) -> dict[str, Any]:
    """Fit on three folds, score on the fourth, for every fold; the defaults scored on the same folds."""
    grid = simplex(dims, step)
    defaults = np.zeros((1, dims))
    defaults[0, :4] = DEFAULTS
    weights = np.vstack([grid, defaults])
    c10, k1, k5 = recall(conv, weights, 10), recall(kor, weights, 1), recall(kor, weights, 5)
    cf, kf = folds(conv), folds(kor)
    tested: dict[str, dict[str, float]] = {"learned": {}, "defaults": {}}
    chosen = []
    for f in range(FOLDS):
        fit = c10[cf != f].mean(axis=0) + k5[kf != f].mean(axis=0)
        best = int(np.argmax(fit[:-1]))
        chosen.append(dict(zip(COMPONENTS, weights[best].round(3).tolist(), strict=False)))
        for name, col in (("learned", best), ("defaults", len(weights) - 1)):
            for label, m, sel in (("conversation R@10", c10, cf == f), ("Korean R@1", k1, kf == f),
                                  ("Korean R@5", k5, kf == f)):
                tested[name][label] = tested[name].get(label, 0.0) + float(m[sel, col].sum())
    sizes = {"conversation R@10": len(conv), "Korean R@1": len(kor), "Korean R@5": len(kor)}
    in_sample = int(np.argmax((c10.mean(axis=0) + k5.mean(axis=0))[:-1]))
    return {
        "weight_rows": len(grid), "chosen_per_fold": chosen,
        "held_out": {n: {k: v / sizes[k] for k, v in t.items()} for n, t in tested.items()},
        "in_sample_best": dict(zip(COMPONENTS, weights[in_sample].round(3).tolist(), strict=False)) | {
            "conversation R@10": float(c10[:, in_sample].mean()), "Korean R@1": float(k1[:, in_sample].mean()),
            "Korean R@5": float(k5[:, in_sample].mean())},
    }


async def run(url: str, data: dict[str, Any]) -> dict[str, Any]:
    """Store both sets, gather the candidates, fit and cross-validate each grid."""
    async with open_engine(Config(database=DatabaseConfig(url=url, pool_min=1, pool_max=2))) as engine:
        conv = await conversations(engine, data)
        kor = await facts(engine, json.loads(FACTS.read_text(encoding="utf-8")))
    return {"questions": {"conversation": len(conv), "Korean": len(kor)},
            "grids": {name: cross_validate(conv, kor, dims, step) for name, (dims, step) in GRIDS.items()}}


def report(results: dict[str, Any]) -> str:
    """Held-out figures of the learned mix beside the defaults, the weights each fold chose, the in-sample best."""
    q = results["questions"]
    lines = [f"{q['conversation']} conversation questions with evidence, {q['Korean']} Korean questions; "
             f"{FOLDS} folds", "", "| grid | weights | conversation R@10 | Korean R@1 | Korean R@5 |",
             "|---|---|---:|---:|---:|"]
    for name, g in results["grids"].items():
        for who in ("defaults", "learned"):
            h = g["held_out"][who]
            lines.append(f"| {name} ({g['weight_rows']} rows) | {who} (held-out folds) | "
                         f"{h['conversation R@10']:.3f} | {h['Korean R@1']:.3f} | {h['Korean R@5']:.3f} |")
        b = g["in_sample_best"]
        lines.append(f"| {name} | best on all the data (in-sample) | {b['conversation R@10']:.3f} | "
                     f"{b['Korean R@1']:.3f} | {b['Korean R@5']:.3f} |")
    for name, g in results["grids"].items():
        lines += ["", f"{name}, the weights each fold chose ({', '.join(COMPONENTS)}):"]
        lines += [" / ".join(f"{v:.2f}" for v in w.values()) for w in g["chosen_per_fold"]]
    return "\n".join(lines)


def main() -> None:
    """Run against a temporary embedded PostgreSQL and print the table."""
    experiment_main(__doc__ or "", "npc-mix-", run, report)


if __name__ == "__main__":
    main()
