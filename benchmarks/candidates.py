"""The service's candidate union, fetched unranked, and ranked by the service's own scoring function.

benchmarks/quality gathers a question's candidates once and ranks them every way it compares: the service's way is
``npc_memory.domain.scoring`` itself (no copy of it here); the only thing of this module's own is the relevance
calibrations the service does not offer (raw cosine, a fixed floor), compared on the weighted sum.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
from npc_memory.domain import scoring
from npc_memory.domain.model import Fusion, Memory, ScoredMemory, Scores, SearchQuery, Tier
from npc_memory.store.keyword import ResolvedKeywordBackend
from npc_memory.store.pool import Database
from npc_memory.store.rows import memory_from_row
from npc_memory.store.search_sql import search_params, search_statement

LOW_BITS = (1 << 64) - 1


@dataclass(frozen=True)
class Candidate:
    """A memory from the candidate union with its raw signals, before scoring."""

    memory: Memory
    cosine: float
    keyword: float
    """The raw keyword score (BM25, or PGroonga's); 0 without a hit."""


async def search_candidates(
    db: Database, query: SearchQuery, terms: Sequence[str], per_side: int, backend: ResolvedKeywordBackend = "bm25"
) -> list[Candidate]:
    """The union of the best ``per_side`` dense, keyword and recency/importance matches, with raw signals.

    The service's search statement, run through the same parameters.
    """
    statement = search_statement(query, terms, backend)
    async with db.connection() as conn:
        cur = await conn.execute(statement, search_params(query, terms, per_side, backend), prepare=True, binary=True)
        rows = await cur.fetchall()
    return [Candidate(memory_from_row(r), float(r["cosine"]), float(r["keyword_score"])) for r in rows]


def gathered(candidates: Sequence[Candidate]) -> scoring.Gathered:
    """The candidates as the scoring function's columns."""
    ids = [c.memory.id.int for c in candidates]
    return scoring.Gathered(
        cosine=np.array([c.cosine for c in candidates], dtype=np.float64),
        keyword=np.array([c.keyword for c in candidates], dtype=np.float64),
        valid_at=np.array([c.memory.valid_at.timestamp() for c in candidates], dtype=np.float64),
        importance=np.array([c.memory.importance for c in candidates], dtype=np.float64),
        id_high=np.array([i >> 64 for i in ids], dtype=np.uint64),
        id_low=np.array([i & LOW_BITS for i in ids], dtype=np.uint64),
        turn=np.array([c.memory.tier is Tier.SOURCE for c in candidates], dtype=np.bool_),
    )


class Calibration(StrEnum):
    """How a raw cosine becomes the relevance component (compared in benchmarks/quality)."""

    RAW = "raw"
    """The cosine clipped to [0, 1]."""
    MINMAX = "minmax"
    """Min-max over the candidates, as Generative Agents does (what the service does)."""
    FLOOR = "floor"
    """``(cosine - floor) / (1 - floor)`` clipped: a fixed floor learned from the model's cosines."""


@dataclass(frozen=True)
class RelevanceCalibration:
    """The calibration in use and, for FLOOR, the cosine that maps to 0."""

    method: Calibration = Calibration.MINMAX
    floor: float = 0.75


DEFAULT_CALIBRATION = RelevanceCalibration()
"""The service's: min-max won on the Korean benchmark (docs/explanation/ranking.md)."""


def rank(
    candidates: Sequence[Candidate], query: SearchQuery, calibration: RelevanceCalibration = DEFAULT_CALIBRATION
) -> list[ScoredMemory]:
    """The best ``query.limit`` candidates, best first: the service's ranking, or another calibration's (weighted)."""
    g = gathered(candidates)
    if calibration.method is Calibration.MINMAX:
        ranked = scoring.rank(g, query)
        return [ScoredMemory(candidates[i].memory, s, cosine=candidates[i].cosine)
                for i, s in zip(ranked.positions.tolist(), ranked.scores(), strict=True)]
    if query.fusion is not Fusion.WEIGHTED:
        raise ValueError("the calibrations the service does not offer are compared on the weighted sum only")
    floor = 0.0 if calibration.method is Calibration.RAW else calibration.floor
    relevance = np.clip((g.cosine - floor) / (1.0 - floor), 0.0, 1.0)
    if query.embedding is None:
        relevance = np.zeros(g.size)
    recency = scoring.recency(g.valid_at, query.now.timestamp(), query.recency_days)
    importance, keyword, w = g.importance / 10.0, scoring.keyword(g.keyword), query.weights
    final = w.recency * recency + w.importance * importance + w.relevance * relevance + w.keyword * keyword
    chosen = scoring.order(final, g.valid_at, g.id_high, g.id_low)[:query.limit].tolist()
    parts = (recency, importance, relevance, keyword, final)
    return [ScoredMemory(candidates[i].memory, Scores(*(float(v[i]) for v in parts)), cosine=candidates[i].cosine)
            for i in chosen]
