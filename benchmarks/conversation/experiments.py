"""Quick experiments for the search-side steps, emulated around the service without changing it.

    python -m benchmarks.conversation.experiments [--json out.json]

- weight profiles sent per request (archive: no recency or importance);
- a recency floor, by re-scoring the service's top 100 with ``max(recency, floor)``;
- date-shaped candidates: the period a question names (text/periods.py) keeps the service's top 100 within
  it, or ranks every turn of the period by cosine;
- neighbouring turns: each of the top 5 hits brings the turns before and after it (15 turns read),
  compared with the plain top 15;
- context embedding: each turn stored with a vector of the previous turn and itself (content unchanged).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any
from uuid import UUID

import numpy as np
from npc_memory.config import Config, DatabaseConfig
from npc_memory.domain.model import Fusion, ScoredMemory, SearchQuery, Vector, Weights
from npc_memory.engine import MemoryEngine
from npc_memory.server.runtime import open_engine
from npc_memory.text.periods import period_in

from benchmarks.conversation import metrics
from benchmarks.conversation.metrics import Answer
from benchmarks.conversation.run import Loaded, embed_turns, experiment_main, load

WIDE = 100
DEFAULT = Weights()
ARCHIVE = Weights(0.0, 0.0, 0.7, 0.3)


@dataclass
class Asked:
    """One question with everything the experiments look at."""

    q: dict[str, Any]
    language: str
    vec: Vector
    now: datetime
    loaded: Loaded
    wide: list[ScoredMemory]
    evidence: list[UUID | None]
    order: dict[UUID, tuple[int, int]]
    """Memory -> (session, turn index): neighbours are the same session's previous and next turn."""
    valid_at: dict[UUID, datetime]


def _answer(a: Asked, ranked: Sequence[UUID]) -> Answer:
    return Answer(a.q["kind"], a.q["shape"], a.language, list(ranked), a.evidence)


def rescored(a: Asked, w: Weights, floor: float = 0.0) -> list[UUID]:
    """The top 100 re-ranked with weights ``w`` and recency ``max(recency, floor)``."""
    def final(h: ScoredMemory) -> float:
        s = h.scores
        return (w.recency * max(s.recency, floor) + w.importance * s.importance + w.relevance * s.relevance
                + w.keyword * s.keyword)
    return [h.memory.id for h in sorted(a.wide, key=final, reverse=True)]


def date_filtered(a: Asked) -> list[UUID]:
    """The service's top 100 kept to the question's period (if it names one)."""
    period = period_in(a.q["text"], a.now)
    ids = [h.memory.id for h in a.wide]
    if period is None:
        return ids
    return [m for m in ids if period.start <= a.valid_at[m] < period.end]


def date_dense(a: Asked) -> list[UUID]:
    """Every turn of the question's period ranked by cosine (the service's order without a period)."""
    period = period_in(a.q["text"], a.now)
    if period is None:
        return [h.memory.id for h in a.wide]
    inside = [m for m, at in a.valid_at.items() if period.start <= at < period.end]
    return sorted(inside, key=lambda m: -float(np.dot(a.vec, a.loaded.vectors[m])))


def with_neighbours(a: Asked, top: int = 5) -> list[UUID]:
    """The top hits, each followed by the turns just before and after it in its session."""
    at = {pos: m for m, pos in a.order.items()}
    out: list[UUID] = []
    for h in a.wide[:top]:
        session, turn = a.order[h.memory.id]
        for m in (h.memory.id, at.get((session, turn - 1)), at.get((session, turn + 1))):
            if m is not None and m not in out:
                out.append(m)
    return out


async def gather(engine: MemoryEngine, data: dict[str, Any], loaded: Sequence[Loaded], w: Weights) -> list[Asked]:
    """Ask every question once with ``limit`` 100 and keep what the experiments need."""
    asked = []
    for conv, lo in zip(data["conversations"], loaded, strict=True):
        now = datetime.fromisoformat(conv["now"])
        order: dict[UUID, tuple[int, int]] = {}
        valid_at: dict[UUID, datetime] = {}
        for s in conv["sessions"]:
            for j, t in enumerate(s["turns"]):
                if t["id"] not in lo.dropped:
                    order[lo.memory_of[t["id"]]] = (s["index"], j)
                    valid_at[lo.memory_of[t["id"]]] = datetime.fromisoformat(s["date"])
        qvecs = await engine.embedder.embed_queries([q["text"] for q in conv["questions"]])
        for q, vec in zip(conv["questions"], qvecs, strict=True):
            hits = await engine.search(SearchQuery(scope=lo.scope, text=q["text"], limit=WIDE, weights=w, now=now,
                                                   fusion=Fusion.WEIGHTED, embedding=vec))
            evidence = [None if t in lo.dropped else lo.memory_of[t] for t in q["evidence"]]
            asked.append(Asked(q, conv["language"], vec, now, lo, hits, evidence, order, valid_at))
    return asked


async def context_vectors(engine: MemoryEngine, data: dict[str, Any]) -> dict[str, Vector]:
    """Each turn's vector taken over the previous turn of its session and itself."""
    ids, texts = [], []
    for c in data["conversations"]:
        for s in c["sessions"]:
            prev = ""
            for t in s["turns"]:
                ids.append(t["id"])
                texts.append(f"{prev}\n{t['text']}" if prev else t["text"])
                prev = t["text"]
    vectors = await engine.embedder.embed_passages(texts)
    return dict(zip(ids, vectors, strict=True))


def _figures(asked: Sequence[Asked], rank: Callable[[Asked], list[UUID]]) -> dict[str, object]:
    return metrics.figures([_answer(a, rank(a)) for a in asked])


async def run(url: str, data: dict[str, Any]) -> dict[str, Any]:
    """Load the conversations twice (turn vectors, context vectors) and run every experiment."""
    out: dict[str, Any] = {}
    async with open_engine(Config(database=DatabaseConfig(url=url, pool_min=1, pool_max=2))) as engine:
        vectors = await embed_turns(engine, data)
        loaded = [await load(engine, c, vectors) for c in data["conversations"]]
        base = await gather(engine, data, loaded, DEFAULT)
        archive = await gather(engine, data, loaded, ARCHIVE)
        out["default (service top 10)"] = _figures(base, lambda a: [h.memory.id for h in a.wide])
        out["archive rel.7+kw.3"] = _figures(archive, lambda a: [h.memory.id for h in a.wide])
        for floor in (0.3, 0.6, 1.0):
            out[f"default, recency floor {floor}"] = _figures(base, partial(rescored, w=DEFAULT, floor=floor))
        out["rel.6+kw.2+rec.1+imp.1"] = _figures(base, lambda a: rescored(a, Weights(0.1, 0.1, 0.6, 0.2)))
        out["default + date window on top 100"] = _figures(base, date_filtered)
        out["archive + date window on top 100"] = _figures(archive, date_filtered)
        out["date window, all its turns by cosine"] = _figures(base, date_dense)
        out["default top 5 + neighbours (15 read)"] = _figures(base, with_neighbours)
        out["default top 15 (15 read)"] = _figures(base, lambda a: [h.memory.id for h in a.wide[:15]])
        ctx = await context_vectors(engine, data)
        ctx_loaded = [await load(engine, c, ctx, "ctx:") for c in data["conversations"]]
        out["context vectors, default"] = _figures(await gather(engine, data, ctx_loaded, DEFAULT),
                                                   lambda a: [h.memory.id for h in a.wide])
        out["context vectors, archive"] = _figures(await gather(engine, data, ctx_loaded, ARCHIVE),
                                                   lambda a: [h.memory.id for h in a.wide])
    return out


def report(results: dict[str, Any]) -> str:
    """R@5 / R@10 overall and for the kinds each experiment aims at."""
    cols = [("all", None), ("time/period", "by_shape"), ("multi/pair", "by_shape"), ("multi/sessions", "by_shape"),
            ("single", "by_kind"), ("update", "by_kind")]
    lines = ["| experiment (R@5 / R@10) | " + " | ".join(c for c, _ in cols) + " | all R@15 |",
             "|---|" + "---:|" * (len(cols) + 1)]
    for name, f in results.items():
        cells = []
        for col, group in cols:
            m = f["all"] if group is None else f[group][col]
            cells.append(f"{m['R@5']:.3f} / {m['R@10']:.3f}")
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {f['all']['R@15']:.3f} |")
    return "\n".join(lines)


def main() -> None:
    """Run the experiments against a temporary embedded PostgreSQL and print R@5 / R@10."""
    experiment_main(__doc__ or "", "npc-experiments-", run, report)


if __name__ == "__main__":
    main()
