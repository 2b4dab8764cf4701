"""Search configurations compared, and the figures computed from the ranked answers: recall, MRR, latency."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import numpy as np
from npc_memory.domain.model import Fusion, Weights

K = (5, 10, 15)

NAMED: dict[str, tuple[Weights, Fusion]] = {
    "default": (Weights(), Fusion.WEIGHTED),
    "dense": (Weights(0.0, 0.0, 1.0, 0.0), Fusion.WEIGHTED),
    "keyword": (Weights(0.0, 0.0, 0.0, 1.0), Fusion.WEIGHTED),
    "rel.7+kw.3": (Weights(0.0, 0.0, 0.7, 0.3), Fusion.WEIGHTED),
    "rrf": (Weights(), Fusion.RRF),
}
"""The configurations of the baseline table: per-request weights and fusion, nothing else changed."""


@dataclass(frozen=True)
class SearchConfig:
    """One way of asking: the weights and fusion sent with each request."""

    name: str
    weights: Weights
    fusion: Fusion


def parse_config(spec: str) -> SearchConfig:
    """A named configuration, or ``name=recency,importance,relevance,keyword[,rrf]``."""
    if spec in NAMED:
        weights, fusion = NAMED[spec]
        return SearchConfig(spec, weights, fusion)
    name, sep, rest = spec.partition("=")
    parts = rest.split(",")
    if not sep or len(parts) not in (4, 5) or (len(parts) == 5 and parts[4] != "rrf"):
        raise ValueError(f"--configs: {spec!r} is neither one of {sorted(NAMED)} nor name=r,i,rel,kw[,rrf]")
    weights = Weights(*(float(p) for p in parts[:4]))
    return SearchConfig(name, weights, Fusion.RRF if len(parts) == 5 else Fusion.WEIGHTED)


@dataclass
class Answer:
    """What one configuration returned for one question, with what the question wanted."""

    kind: str
    shape: str
    language: str
    ranked: list[UUID]
    evidence: list[UUID | None]
    """One entry per evidence turn: its memory, or None when the write path dropped the turn as a duplicate."""
    stale: set[UUID] = field(default_factory=set)
    top_cosine: float = 0.0
    top_score: float = 0.0
    seconds: float = 0.0


def recall(a: Answer, k: int) -> float:
    """Share of the evidence turns among the first ``k`` hits (a dropped turn is never found)."""
    top = set(a.ranked[:k])
    return sum(1 for e in a.evidence if e is not None and e in top) / len(a.evidence)


def reciprocal_rank(a: Answer) -> float:
    """1 / rank of the first evidence turn among the hits, 0 if none."""
    wanted = {e for e in a.evidence if e is not None}
    return next((1.0 / (i + 1) for i, m in enumerate(a.ranked) if m in wanted), 0.0)


def newer_first(a: Answer) -> bool:
    """An update question's newer turn ranks above every stale one (a missing turn ranks last)."""
    pos = {m: i for i, m in enumerate(a.ranked)}
    new = min((pos.get(e, len(a.ranked)) for e in a.evidence if e is not None), default=len(a.ranked))
    return new < len(a.ranked) and all(new < pos.get(s, len(a.ranked)) for s in a.stale)


def summary(answers: Sequence[Answer]) -> dict[str, float]:
    """R@5, R@10, R@15 and MRR averaged over answerable questions."""
    scored = [a for a in answers if a.evidence]
    if not scored:
        return {}
    out = {f"R@{k}": float(np.mean([recall(a, k) for a in scored])) for k in K}
    out["MRR"] = float(np.mean([reciprocal_rank(a) for a in scored]))
    out["n"] = len(scored)
    return out


def auroc(positive: Iterable[float], negative: Iterable[float]) -> float:
    """Chance that an answerable question's top value beats a never-said one's (ties count half)."""
    pos, neg = list(positive), list(negative)
    if not pos or not neg:
        return float("nan")
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def confidence(answers: Sequence[Answer]) -> dict[str, float]:
    """How sure the top hit looks for never-said questions compared with answerable ones."""
    never = [a for a in answers if not a.evidence]
    known = [a for a in answers if a.evidence]
    return {
        "never_top_cosine": float(np.mean([a.top_cosine for a in never])) if never else float("nan"),
        "answerable_top_cosine": float(np.mean([a.top_cosine for a in known])) if known else float("nan"),
        "auroc_cosine": auroc((a.top_cosine for a in known), (a.top_cosine for a in never)),
        "never_top_score": float(np.mean([a.top_score for a in never])) if never else float("nan"),
        "answerable_top_score": float(np.mean([a.top_score for a in known])) if known else float("nan"),
        "auroc_score": auroc((a.top_score for a in known), (a.top_score for a in never)),
    }


def latency(answers: Sequence[Answer]) -> dict[str, float]:
    """Search latency percentiles in milliseconds."""
    ms = np.array([a.seconds * 1000.0 for a in answers])
    return {"p50_ms": float(np.percentile(ms, 50)), "p95_ms": float(np.percentile(ms, 95))}


def figures(answers: Sequence[Answer]) -> dict[str, object]:
    """Every figure of one configuration: overall, by kind, by language, update order, confidence, latency."""
    kinds = sorted({a.kind for a in answers if a.evidence})
    shapes = sorted({(a.kind, a.shape) for a in answers if a.evidence})
    updates = [a for a in answers if a.kind == "update"]
    return {
        "all": summary(answers),
        "by_kind": {k: summary([a for a in answers if a.kind == k]) for k in kinds},
        "by_shape": {f"{k}/{s}": summary([a for a in answers if (a.kind, a.shape) == (k, s)]) for k, s in shapes},
        "by_language": {lang: summary([a for a in answers if a.language == lang])
                        for lang in sorted({a.language for a in answers})},
        "update_newer_first": float(np.mean([newer_first(a) for a in updates])) if updates else float("nan"),
        "adversarial": confidence(answers),
        "latency": latency(answers),
    }


def kind_table(figures: dict[str, dict[str, Any]], head: str) -> str:
    """R@5 / R@10 overall and R@10 by kind, shape and language: one row per named result, ``head`` its column."""
    lines = [f"| {head} | R@5 | R@10 | multi | pairs | across sessions | single | time | update | en | ko |",
             "|---|" + "---:|" * 10]
    for name, f in figures.items():
        cells = [f["all"]["R@5"], f["all"]["R@10"], f["by_kind"]["multi"]["R@10"],
                 f["by_shape"]["multi/pair"]["R@10"], f["by_shape"]["multi/sessions"]["R@10"],
                 f["by_kind"]["single"]["R@10"], f["by_kind"]["time"]["R@10"], f["by_kind"]["update"]["R@10"],
                 f["by_language"]["en"]["R@10"], f["by_language"]["ko"]["R@10"]]
        lines.append(f"| {name} | " + " | ".join(f"{c:.3f}" for c in cells) + " |")
    return "\n".join(lines)
