"""A held scope's reused selection of rows (search/kept.py) ranks exactly as a fresh one.

Pure domain code on synthetic columns: rows that start and stop being valid at known times, searches whose time
walks across those times (and back), filters that must not reuse the plain selection, and the memo cleared when
the rows change. Every ranking through the memo is compared with one made without it, float for float.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from npc_memory.domain.model import MemoryFilter, Scope, SearchQuery, Speaker, Weights
from npc_memory.search.columns import Floats, Indices, ScopeColumns
from npc_memory.search.kept import MAX_KEYWORD_SIDES, MAX_SHARES, KeptMemo
from npc_memory.search.rank import RankedRow, rank

BASE = datetime(2026, 11, 1, tzinfo=UTC)
ROWS = 300
DIM = 16
TERMS = ("고양이", "좋아하다", "그때", "비", "바다")


def _columns(seed: int = 0) -> ScopeColumns:
    """300 rows: starts over ten days, one in five closed at a later time, random vectors, terms and speakers."""
    rng = np.random.default_rng(seed)
    start = BASE.timestamp() + rng.uniform(0, 10 * 86400, ROWS)
    end = np.where(rng.random(ROWS) < 0.2, start + rng.uniform(3600, 5 * 86400, ROWS), np.inf)
    vectors = rng.standard_normal((ROWS, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    terms = [rng.choice(len(TERMS), size=rng.integers(1, 6)) for _ in range(ROWS)]
    postings: dict[str, tuple[Indices, Floats]] = {}
    for t, term in enumerate(TERMS):
        rows = np.array([i for i, ts in enumerate(terms) if t in ts], dtype=np.intp)
        counts = np.array([float(np.sum(terms[i] == t)) for i in rows])
        postings[term] = (rows, counts)
    speakers = np.array(rng.choice(["user", "heroine"], ROWS), dtype=object)
    labels = {"speaker": speakers, **{name: np.full(ROWS, None, dtype=object)
                                      for name in ("subject", "subject_id", "content_type", "tier", "slot")}}
    ids = rng.integers(0, 2**63, size=(ROWS, 2), dtype=np.uint64)
    return ScopeColumns(ROWS, start, end, rng.integers(0, 11, ROWS).astype(np.float64),
                        np.array([float(len(t)) for t in terms]), vectors, ids[:, 0], ids[:, 1],
                        lambda term: postings.get(term, (np.zeros(0, dtype=np.intp), np.zeros(0))), labels)


def _query(now: datetime, seed: int, **kw: object) -> SearchQuery:
    rng = np.random.default_rng(seed)
    vector = rng.standard_normal(DIM).astype(np.float32)
    return SearchQuery(scope=Scope("p", "letia"), text="그때 고양이 좋아해?", limit=10, weights=Weights(), now=now,
                       embedding=vector / np.linalg.norm(vector), **kw)  # type: ignore[arg-type]


def _same(a: list[RankedRow], b: list[RankedRow]) -> None:
    assert [(r.row, r.scores, r.cosine) for r in a] == [(r.row, r.scores, r.cosine) for r in b]


@pytest.mark.parametrize("step_hours", [0.5, 7.0, -3.0])
def test_reused_selection_ranks_as_a_fresh_one_as_time_walks(step_hours: float) -> None:
    """Searches an hour or days apart (and going back) cross rows' starts and ends: memo and fresh agree."""
    cols, memo = _columns(), KeptMemo()
    terms = ["그때", "고양이", "좋아하다"]
    start = BASE + (timedelta(days=12) if step_hours < 0 else timedelta(days=1))
    reused = 0
    for i in range(80):
        query = _query(start + timedelta(hours=step_hours * i), i)
        before = memo._held
        _same(rank(cols, query, terms, 20, memo), rank(cols, query, terms, 20))
        reused += before is not None and memo._held is before
    # Forward in time the memo is used (not only rebuilt); going back it is never trusted.
    assert (reused > 0) == (step_hours > 0)


def test_filters_and_past_views_do_not_take_the_plain_selection() -> None:
    """A speaker filter, include_invalidated, an as_of or a minimum importance between plain searches: all exact."""
    cols, memo = _columns(1), KeptMemo()
    terms = ["비", "바다"]
    now = BASE + timedelta(days=11)
    variants: list[dict[str, object]] = [
        {}, {"filter": MemoryFilter(speakers=(Speaker.USER,))}, {}, {"include_invalidated": True}, {},
        {"as_of": BASE + timedelta(days=3)}, {}, {"filter": MemoryFilter(min_importance=5)}, {},
    ]
    for i, kw in enumerate(variants):
        query = _query(now + timedelta(minutes=i), i, **kw)
        _same(rank(cols, query, terms, 20, memo), rank(cols, query, terms, 20))


def test_a_cleared_memo_takes_the_new_rows() -> None:
    """The rows change (a row closed, another importance): after ``clear`` the ranking is the new rows'."""
    cols, memo = _columns(2), KeptMemo()
    query = _query(BASE + timedelta(days=11), 7)
    first = rank(cols, query, ["고양이"], 20, memo)
    top = first[0].row
    cols.invalid_at[top] = BASE.timestamp()  # closed long ago: no longer valid now
    memo.clear()
    after = rank(cols, query, ["고양이"], 20, memo)
    assert top not in [r.row for r in after]
    _same(after, rank(cols, query, ["고양이"], 20))


def test_words_asked_once_do_not_pile_up() -> None:
    """Thousands of distinct query words (none in the scope) against one selection: what it keeps stays bounded."""
    cols, memo = _columns(3), KeptMemo()
    kept = memo.kept(cols, _query(BASE + timedelta(days=11), 1))
    for i in range(MAX_SHARES + 500):
        at, share = kept.term_share(cols, f"단어{i}")
        assert at.size == 0
        assert share.size == 0
    assert len(kept._shares) <= MAX_SHARES
    at, share = kept.term_share(cols, "고양이")  # a word of the scope still scores after the clearing
    assert at.size > 0
    assert bool(np.all(share > 0))


def test_a_repeated_query_reuses_its_keyword_side_and_ranks_the_same() -> None:
    """The same words again within a selection: the kept keyword side answers, float for float.

    What a selection keeps stays bounded however many different word sets are asked.
    """
    cols, memo = _columns(4), KeptMemo()
    now = BASE + timedelta(days=11)
    terms = ["그때", "좋아하다"]
    for i in range(5):  # other vectors and times (within the selection), the same words
        query = _query(now + timedelta(seconds=i), i)
        _same(rank(cols, query, terms, 20, memo), rank(cols, query, terms, 20))
    kept = memo.kept(cols, _query(now, 0))
    assert [key[:2] for key in kept.keyword_sides] == [(("그때", "좋아하다"), 20)]  # made once, used five times
    swapped = ["좋아하다", "그때"]
    _same(rank(cols, _query(now, 9), swapped, 20, memo), rank(cols, _query(now, 9), swapped, 20))
    assert len(kept.keyword_sides) == 2  # another order of the words sums in another order: its own entry
    for i in range(MAX_KEYWORD_SIDES + 10):
        words = [TERMS[i % len(TERMS)], f"단어{i}"]
        _same(rank(cols, _query(now, i), words, 20, memo), rank(cols, _query(now, i), words, 20))
    assert len(kept.keyword_sides) <= MAX_KEYWORD_SIDES
