"""The search score written independently of the service, in plain Python: the reference its tests rank against.

It follows the formula as docs/explanation/ranking.md states it, one candidate at a time (math, sorted), sharing
nothing with npc_memory.domain.scoring but the published constants.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from npc_memory.domain.model import Fusion, SearchQuery
from npc_memory.domain.score_constants import FLAT_RANGE, RECENCY_EXPONENT_CAP, RRF_K, SECONDS_PER_DAY


@dataclass(frozen=True)
class Row:
    """A candidate's raw signals."""

    id: UUID
    valid_at: datetime
    importance: int
    cosine: float
    keyword: float
    turn: bool = False
    """Of tier source (a stated dialogue's turn): weighted by ``query.turn_weights`` when the query has them."""


@dataclass(frozen=True)
class Hit:
    """A ranked candidate: its id and its components and final score."""

    id: UUID
    recency: float
    importance: float
    relevance: float
    keyword: float
    final: float


def rank(rows: list[Row], query: SearchQuery) -> list[Hit]:
    """The ``query.limit`` best rows, best first."""
    has_vector = query.embedding is not None
    w = query.weights
    rec = []
    for r in rows:
        age_days = max(0.0, (query.now - r.valid_at).total_seconds() / SECONDS_PER_DAY)
        rec.append(math.exp(-min(age_days / query.recency_days, RECENCY_EXPONENT_CAP)))
    imp = [r.importance / 10.0 for r in rows]
    cosines = [r.cosine for r in rows]
    if not has_vector or not rows:
        rel = [0.0] * len(rows)
    elif max(cosines) - min(cosines) < FLAT_RANGE:
        rel = [min(1.0, max(0.0, c)) for c in cosines]
    else:
        low, high = min(cosines), max(cosines)
        rel = [(c - low) / (high - low) for c in cosines]
    best = max((r.keyword for r in rows), default=0.0)
    kw = [max(0.0, r.keyword) / best if best > 0 else 0.0 for r in rows]
    if query.fusion is Fusion.RRF:
        def ranks(values: list[float]) -> list[int]:
            order = sorted(range(len(rows)), key=lambda i: (-values[i], rows[i].id.bytes))
            out = [0] * len(rows)
            for place, i in enumerate(order, start=1):
                out[i] = place
            return out

        r_rec, r_imp, r_rel, r_kw = ranks(rec), ranks(imp), ranks(rel), ranks(kw)
        scale = (w.recency + w.importance + w.relevance + w.keyword) / (RRF_K + 1) or 1.0
        final = [(w.recency / (RRF_K + r_rec[i]) + w.importance / (RRF_K + r_imp[i])
                  + (w.relevance / (RRF_K + r_rel[i]) if has_vector else 0.0)
                  + (w.keyword / (RRF_K + r_kw[i]) if kw[i] > 0 else 0.0)) / scale for i in range(len(rows))]
    else:
        final = []
        for i, r in enumerate(rows):
            v = query.turn_weights if r.turn and query.turn_weights is not None else w
            final.append(v.recency * rec[i] + v.importance * imp[i] + v.relevance * rel[i] + v.keyword * kw[i])

    def first(i: int) -> bool:
        if query.period is None or not query.period_first:
            return False
        return query.period[0] <= rows[i].valid_at < query.period[1]

    order = sorted(range(len(rows)),
                   key=lambda i: (not first(i), -final[i], -rows[i].valid_at.timestamp(), rows[i].id.bytes))
    return [Hit(rows[i].id, rec[i], imp[i], rel[i], kw[i], final[i]) for i in order[:query.limit]]
