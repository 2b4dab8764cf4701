"""The search statement's ranking, over one scope's rows held in memory as columns (store/scope_cache.py).

The same arithmetic as store/search_sql.py and store/search_bm25.py, step for step: the rows valid at the
request's time and matching its filter, each row's cosine, prior and BM25 score over those rows, the union of the
candidate lists (best cosine, best keyword score, best prior, and a named period's best cosine, ``per_side``
each), the components normalised over the candidates, and the weighted sum or RRF, the period's rows first when
asked, ties to the newer fact, then the smaller id. Cosines are float32 inner products, as pgvector computes
them; the order of the additions differs, so two rows whose scores differ by ~1e-7 may swap.

Only queries the plain scope rows can answer are ranked here (``servable``): the live timeline, the scope's own
rows, no links to follow; every other query runs the statement.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from npc_memory.domain import scoring
from npc_memory.domain.model import LIVE, Fusion, MemoryFilter, Scores, SearchQuery
from npc_memory.domain.scoring import FLAT_RANGE, RECENCY_EXPONENT_CAP, RRF_K, SECONDS_PER_DAY

Floats = npt.NDArray[np.float64]
Indices = npt.NDArray[np.intp]
Postings = Callable[[str], tuple[Indices, Floats]]
"""A term's rows (indices into the columns) and its count in each."""


@dataclass(frozen=True)
class ScopeColumns:
    """One scope's rows as columns, ``count`` long (the arrays may be longer: the rest is unused)."""

    count: int
    valid_at: Floats
    """Epoch seconds."""
    invalid_at: Floats
    """Epoch seconds; +inf for a row still valid."""
    importance: Floats
    lengths: Floats
    """Each row's number of terms (BM25's document length)."""
    vectors: npt.NDArray[np.float32]
    id_high: npt.NDArray[np.uint64]
    id_low: npt.NDArray[np.uint64]
    """The row's UUID as two unsigned halves: the order PostgreSQL sorts uuids in."""
    postings: Postings
    labels: Mapping[str, npt.NDArray[np.object_]]
    """The text columns a filter names (FILTERED), one value per row (None where the row has none: a slot)."""


FILTERED = ("speaker", "subject", "subject_id", "content_type", "tier", "slot")
"""The columns MemoryFilter restricts besides importance (store/filters.py's MEMORY_FILTER)."""


@dataclass(frozen=True)
class RankedRow:
    """A hit: its row index in the columns, its scores and its raw cosine."""

    row: int
    scores: Scores
    cosine: float


def servable(query: SearchQuery) -> bool:
    """Whether the plain scope rows can answer the query as the statement would."""
    return query.view == LIVE and not query.include_shared and query.hops == 0


def _wanted(flt: MemoryFilter) -> list[tuple[str, list[str]]]:
    """Each filtered column with the values it may hold (only the restrictions the filter makes)."""
    values = {"speaker": flt.speakers, "subject": flt.subjects, "subject_id": flt.subject_ids,
              "content_type": flt.content_types, "tier": flt.tiers, "slot": (flt.slot,) if flt.slot else ()}
    return [(name, [str(v) for v in values[name]]) for name in FILTERED if values[name]]


def _top(values: Floats, among: Indices, k: int, high: npt.NDArray[np.uint64], low: npt.NDArray[np.uint64]) -> Indices:
    """The ``k`` positions of ``among`` with the largest values, ties to the smaller id (all when fewer)."""
    if among.size <= k:
        return among
    v = values[among]
    cut = np.partition(v, among.size - k)[among.size - k]
    above = among[v > cut]
    tied = among[v == cut]
    need = k - above.size
    if tied.size > need:
        tied = tied[np.lexsort((low[tied], high[tied]))[:need]]
    return np.concatenate([above, tied])


def _bm25(cols: ScopeColumns, rows: Indices, keep: npt.NDArray[np.bool_], terms: Sequence[str]) -> Floats:
    """Each kept row's BM25 score (search_bm25's unrolled form: idf x tf / (tf + c1 + c2 x dl))."""
    score = np.zeros(rows.size)
    n = float(rows.size)
    avgdl = float(cols.lengths[rows].mean())
    if avgdl == 0.0:
        return score
    position = np.cumsum(keep) - 1
    k1, b = scoring.BM25_K1, scoring.BM25_B  # read per call: benchmarks.conversation.bm25 varies them
    c1 = k1 * (1.0 - b)
    c2 = k1 * b / avgdl
    for term in dict.fromkeys(terms):
        held, tf = cols.postings(term)
        kept = keep[held]
        held, tf = held[kept], tf[kept]
        if held.size == 0:
            continue
        df = float(held.size)
        idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
        at = position[held]
        score[at] += idf * tf / (tf + (c1 + c2 * cols.lengths[held]))
    return score


def _order(final: Floats, valid_at: Floats, high: npt.NDArray[np.uint64], low: npt.NDArray[np.uint64],
           first: npt.NDArray[np.bool_] | None = None) -> Indices:
    """Positions by final score descending, then the newer fact, then the smaller id (``first`` rows before all)."""
    keys = (low, high, -valid_at, -final) if first is None else (low, high, -valid_at, -final, ~first)
    return np.lexsort(keys)


def _in_period(query: SearchQuery, valid_at: Floats) -> npt.NDArray[np.bool_]:
    """Which of the rows were valid from in the query's period ``[start, end)``."""
    assert query.period is not None
    start, end = (t.timestamp() for t in query.period)
    return np.asarray((valid_at >= start) & (valid_at < end))


def _kept(cols: ScopeColumns, query: SearchQuery) -> npt.NDArray[np.bool_]:
    """Which rows the statement's WHERE would keep: the filter, and validity at ``as_of`` (or ``now``)."""
    n = cols.count
    keep = cols.importance[:n] >= query.filter.min_importance
    for name, allowed in _wanted(query.filter):
        column = cols.labels[name][:n]
        held = np.zeros(n, dtype=np.bool_)
        for value in allowed:  # not np.isin: it may sort the column, and a row without a slot holds None
            held |= column == value
        keep &= held
    if not query.include_invalidated:
        at = (query.as_of or query.now).timestamp()
        keep &= (cols.valid_at[:n] <= at) & (cols.invalid_at[:n] > at)
    return np.asarray(keep)


def rank(cols: ScopeColumns, query: SearchQuery, terms: Sequence[str], per_side: int) -> list[RankedRow]:
    """The query's ``limit`` best rows: ``terms`` score the keyword side (none: no keyword side)."""
    keep = _kept(cols, query)
    rows = np.flatnonzero(keep)
    if rows.size == 0:
        return []
    w = query.weights
    recency = np.exp(-np.minimum(np.maximum(query.now.timestamp() - cols.valid_at[rows], 0.0)
                                 / (query.recency_days * SECONDS_PER_DAY), RECENCY_EXPONENT_CAP))
    importance = cols.importance[rows] / 10.0
    prior = w.recency * recency + w.importance * importance
    has_vector = query.embedding is not None
    # Every row's product, then the kept ones: indexing the matrix first would copy it (3 MB at 2,000 rows).
    cosine = ((cols.vectors @ query.embedding)[rows].astype(np.float64) if query.embedding is not None
              else np.zeros(rows.size))
    keyword = bool(terms) and w.keyword > 0
    score = _bm25(cols, rows, keep, terms) if keyword else np.zeros(rows.size)
    everyone = np.arange(rows.size)
    high, low = cols.id_high[rows], cols.id_low[rows]
    lists = [_top(prior, everyone, per_side, high, low)]
    if has_vector:
        lists.append(_top(cosine, everyone, per_side, high, low))
    if keyword:
        lists.append(_top(score, np.flatnonzero(score > 0.0), per_side, high, low))
    if query.period is not None:  # the period's best by cosine, then prior, then id
        inside = np.flatnonzero(_in_period(query, cols.valid_at[rows]))
        order = np.lexsort((low[inside], high[inside], -prior[inside], -cosine[inside]))
        lists.append(inside[order[:per_side]])
    c = np.unique(np.concatenate(lists))
    c_cos, c_score = cosine[c], score[c]
    if not has_vector:
        relevance = np.zeros(c.size)
    elif c_cos.max() - c_cos.min() < FLAT_RANGE:
        relevance = np.clip(c_cos, 0.0, 1.0)
    else:
        relevance = (c_cos - c_cos.min()) / (c_cos.max() - c_cos.min())
    best = c_score.max()
    s_keyword = np.zeros(c.size) if best <= 0 else np.maximum(c_score, 0.0) / best
    s_recency, s_importance = recency[c], importance[c]
    row = rows[c]
    c_high, c_low = high[c], low[c]
    if query.fusion is Fusion.RRF:
        final = _rrf(query, [s_recency, s_importance, relevance, s_keyword], c_high, c_low, has_vector)
    else:
        final = w.recency * s_recency + w.importance * s_importance + w.relevance * relevance + w.keyword * s_keyword
    first = _in_period(query, cols.valid_at[row]) if query.period is not None and query.period_first else None
    chosen = _order(final, cols.valid_at[row], c_high, c_low, first)[:query.limit]
    # Python numbers a column at a time (tolist), not a NumPy scalar per value and field.
    picked = zip(*(a[chosen].tolist() for a in (row, s_recency, s_importance, relevance, s_keyword, final, c_cos)),
                 strict=True)
    return [RankedRow(r, Scores(recency=rec, importance=imp, relevance=rel, keyword=kw, final=fin), cos)
            for r, rec, imp, rel, kw, fin, cos in picked]


def _rrf(query: SearchQuery, components: list[Floats], high: npt.NDArray[np.uint64], low: npt.NDArray[np.uint64],
         has_vector: bool) -> Floats:
    """RRF's final score: each side's weight / (RRF_K + rank), ranks by the component then the id, scaled."""
    w = query.weights
    ranks = []
    for values in components:
        rank_of = np.empty(values.size)
        rank_of[np.lexsort((low, high, -values))] = np.arange(1, values.size + 1, dtype=np.float64)
        ranks.append(rank_of)
    k = float(RRF_K)
    s_keyword = components[3]
    total = (w.recency / (k + ranks[0]) + w.importance / (k + ranks[1])
             + (w.relevance / (k + ranks[2]) if has_vector else 0.0)
             + np.where(s_keyword > 0, w.keyword / (k + ranks[3]), 0.0))
    return np.asarray(total / w.rrf_best, dtype=np.float64)
