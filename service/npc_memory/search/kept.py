"""The rows a search of a held scope ranks, and what the next search of the same rows reuses of them.

A plain search (no filter but a minimum importance, the rows valid at its time) keeps the same rows as the last
one until the scope changes or the time passes a row's start or end, and everything ranking derives from those rows
alone (their indices, importance, start times and ids, the average length, each query term's BM25 share per row)
is then the same arrays. ``KeptMemo`` keeps them for the next search; the arithmetic is the one scope_rank did
inline, so the scores are the same floats.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from npc_memory.domain.model import SearchQuery
from npc_memory.domain.score_constants import BM25_B, BM25_K1
from npc_memory.search.columns import Floats, Indices, ScopeColumns, wanted

MAX_SHARES = 4096
"""Query terms whose shares one selection keeps (a scope has a few thousand distinct terms at most)."""
MAX_KEYWORD_SIDES = 32
"""Queries whose keyword side one selection keeps (each holds a score per kept row)."""


@dataclass
class Kept:
    """The rows a search ranks and their columns in that order (read-only: the next search may reuse them)."""

    keep: npt.NDArray[np.bool_]
    """Over all the scope's rows: which are ranked."""
    rows: Indices
    """The ranked rows' indices into the columns."""
    importance: Floats
    """Importance, 1-10."""
    valid_at: Floats
    high: npt.NDArray[np.uint64]
    low: npt.NDArray[np.uint64]
    avgdl: float
    """The rows' average number of terms."""
    _position: Indices | None = None
    _shares: dict[str, tuple[Indices, Floats]] = field(default_factory=dict)
    keyword_sides: dict[tuple[tuple[str, ...], int], tuple[Floats, tuple[Indices | slice, ...]]] = field(
        default_factory=dict)
    """Per query (its distinct terms and the candidates per side): every kept row's BM25 score and where the best
    scoring rows are (search/rank.py fills it); at most ``MAX_KEYWORD_SIDES``."""

    @property
    def every_row(self) -> bool:
        """Whether every row of the columns is ranked (so a column needs no indexing)."""
        return self.rows.size == self.keep.size

    def term_share(self, cols: ScopeColumns, term: str) -> tuple[Indices, Floats]:
        """The ranked rows holding ``term`` (positions in ``rows``) and its BM25 share in each: idf x tf / (tf + ...).

        search_bm25's unrolled form, with N, df and the average length over the ranked rows.
        """
        found = self._shares.get(term)
        if found is None:
            if len(self._shares) >= MAX_SHARES:  # many distinct words asked while the rows stay the same
                self._shares.clear()
            held, tf = cols.postings(term)
            kept = self.keep[held]
            held, tf = held[kept], tf[kept]
            n, df = float(self.rows.size), float(held.size)
            idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
            c1, c2 = BM25_K1 * (1.0 - BM25_B), BM25_K1 * BM25_B / self.avgdl
            found = self._shares[term] = (self.position[held], idf * tf / (tf + (c1 + c2 * cols.lengths[held])))
        return found

    @property
    def position(self) -> Indices:
        """Each column row's position among the ranked rows (meaningful for the ranked ones only)."""
        if self._position is None:
            self._position = np.cumsum(self.keep) - 1
        return self._position


def _mask(cols: ScopeColumns, query: SearchQuery) -> npt.NDArray[np.bool_]:
    """Which rows the statement's WHERE would keep: the filter, and validity at ``as_of`` (or ``now``)."""
    n = cols.count
    keep = cols.importance[:n] >= query.filter.min_importance
    for name, allowed in wanted(query.filter):
        column = cols.labels[name][:n]
        held = np.zeros(n, dtype=np.bool_)
        for value in allowed:  # not np.isin: it may sort the column, and a row without a slot holds None
            held |= column == value
        keep &= held
    if not query.include_invalidated:
        at = _time(query)
        keep &= (cols.valid_at[:n] <= at) & (cols.invalid_at[:n] > at)
    return np.asarray(keep)


def _time(query: SearchQuery) -> float:
    """The time rows must be valid at."""
    return (query.as_of or query.now).timestamp()


def select(cols: ScopeColumns, query: SearchQuery) -> Kept:
    """The rows the query ranks, with their columns."""
    keep = _mask(cols, query)
    rows = np.flatnonzero(keep)
    whole = rows.size == cols.count
    lengths = cols.lengths if whole else cols.lengths[rows]
    avgdl = float(lengths.mean()) if rows.size else 0.0
    if whole:  # no copies: the columns as they are
        return Kept(keep, rows, cols.importance, cols.valid_at, cols.id_high, cols.id_low, avgdl)
    return Kept(keep, rows, cols.importance[rows], cols.valid_at[rows], cols.id_high[rows],
                cols.id_low[rows], avgdl)


class KeptMemo:
    """One scope's last plain selection, reused while its rows stay the same (``clear`` on every change).

    Only searches that restrict nothing but the minimum importance and rank the rows valid at their time reuse it:
    from the time it was made until the next time a row starts or stops being valid.
    """

    def __init__(self) -> None:
        self._held: tuple[float, float, float, Kept] | None = None
        """(minimum importance, from, until, the selection)."""

    def clear(self) -> None:
        """Forget the selection (the rows changed)."""
        self._held = None

    def kept(self, cols: ScopeColumns, query: SearchQuery) -> Kept:
        """The query's selection: the last one when it still holds, else a new one (kept if the query is plain)."""
        if query.include_invalidated or wanted(query.filter):
            return select(cols, query)
        at, least = _time(query), query.filter.min_importance
        held = self._held
        if held is not None and held[0] == least and held[1] <= at < held[2]:
            return held[3]
        kept = select(cols, query)
        self._held = (least, at, _next_change(cols, at), kept)
        return kept


def _next_change(cols: ScopeColumns, at: float) -> float:
    """The first time after ``at`` that a row starts or stops being valid (+inf when none does)."""
    n = cols.count
    later = np.concatenate([cols.valid_at[:n], cols.invalid_at[:n]])
    later = later[later > at]
    return float(later.min()) if later.size else math.inf
