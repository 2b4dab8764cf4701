"""One scope's rows held in memory as columns (search/rank.py ranks them), updated row by row.

Rows come from the cache's sync statement (search/held.py) with their scope version: a row already held is
replaced only by a newer version of itself, a new row is appended. The columns grow by doubling, so keeping a
scope current after a store costs the changed rows, not a rebuild.
"""

from __future__ import annotations

import sys
from array import array
from collections import Counter
from collections.abc import Sequence
from dataclasses import fields
from typing import Any
from uuid import UUID

import numpy as np
import numpy.typing as npt

from npc_memory.domain.model import Memory, Scope, Vector
from npc_memory.search.columns import FILTERED, Floats, Indices, ScopeColumns
from npc_memory.search.kept import KeptMemo
from npc_memory.store.rows import memory_values

_NEVER = float("inf")
_NO_ROWS: tuple[Indices, Floats] = (np.zeros(0, dtype=np.intp), np.zeros(0))
_HALF = 64


def _shared(value: Any) -> Any:
    """One string object per distinct value for the few-valued text columns (ids, kinds, models)."""
    return sys.intern(value) if isinstance(value, str) else value


_FIELDS = tuple(f.name for f in fields(Memory))
"""Memory's fields in order: a held row keeps their values as a tuple in this order."""
_INTERNED = ("subject_id", "slot", "embedding_model")


class ScopeRows:
    """A scope's rows as the live view shows them: the ranking's columns, each row's versions and the rows themselves.

    Held for sharing searches, they include the player's shared rows of other heroines.
    """

    def __init__(self, scope: Scope) -> None:
        self.dimensions = 0
        """The vectors' size, set by the first row."""
        self.count = 0
        self._scopes = {scope.heroine_id: scope}
        """Each row's scope by heroine (one object per heroine): the scope held, and those a shared row came from."""
        self._rows: list[tuple[Any, ...]] = []
        """Each row's Memory fields in order (a tuple is ~1 KB a row smaller than its dict); the enums converted
        once here, not each time a search first returns the row."""
        self._memories: list[Memory | None] = []
        """Each row as a Memory once a search returned it (frozen, so shared by every search)."""
        self._terms: list[tuple[str, ...]] = []
        self._index: dict[UUID, int] = {}
        self._versions = np.zeros(0, dtype=np.int64)
        self._valid_at = np.zeros(0)
        self._invalid_at = np.zeros(0)
        self._importance = np.zeros(0)
        self._lengths = np.zeros(0)
        self._high = np.zeros(0, dtype=np.uint64)
        self._low = np.zeros(0, dtype=np.uint64)
        self._vectors = np.zeros((0, 0), dtype=np.float32)
        self._labels = {name: np.zeros(0, dtype=object) for name in FILTERED}
        self._postings: dict[str, tuple[array[int], array[float]]] = {}
        """Per term, the rows holding it and its count in each (8 bytes an entry, not two Python objects)."""
        self._arrays: dict[str, tuple[Indices, Floats]] = {}
        self.memo = KeptMemo()
        """The last search's selection of rows, for the next search to reuse until these rows change."""
        self._product: tuple[Vector, npt.NDArray[np.float32]] | None = None
        """The last query vector asked of ``product`` and every row's inner product with it."""

    def fits(self, rows: Sequence[dict[str, Any]]) -> bool:
        """Whether every row's vector has this scope's dimensions (a half re-embedded scope does not)."""
        if not self.dimensions and rows:
            self.dimensions = rows[0]["embedding"].dimensions()
            self._vectors = np.zeros((0, self.dimensions), dtype=np.float32)
        return all(r["embedding"].dimensions() == self.dimensions for r in rows)

    def apply(self, rows: Sequence[dict[str, Any]]) -> None:
        """Take rows read from the table: new ones appended, newer versions of held ones put in their place."""
        if rows:
            self.memo.clear()
            self._product = None
        for row in rows:
            at = self._index.get(row["id"])
            if at is None:
                self._append(row)
            elif row["scope_version"] > self._versions[at]:
                self._replace(at, row)

    def product(self, vector: Vector) -> npt.NDArray[np.float32]:
        """Every row's inner product with ``vector``, kept for the same vector object until the rows change.

        A caller-vector search makes them while its sync is in the database (search/held.py) and ranks with them
        when the sync changed no row: the same call on the same matrix, so the same floats.
        """
        held = self._product
        if held is not None and held[0] is vector:
            return held[1]
        found = self._vectors[:self.count] @ vector
        self._product = (vector, found)
        return found

    def memory(self, row: int) -> Memory:
        """The memory at a row index of the columns."""
        found = self._memories[row]
        if found is None:
            found = self._memories[row] = Memory(*self._rows[row])
        return found

    def columns(self) -> ScopeColumns:
        """The columns the ranking reads (views of the held arrays: valid until the next ``apply``)."""
        n = self.count
        return ScopeColumns(n, self._valid_at[:n], self._invalid_at[:n], self._importance[:n], self._lengths[:n],
                            self._vectors[:n], self._high[:n], self._low[:n], self.postings,
                            {name: values[:n] for name, values in self._labels.items()})

    def postings(self, term: str) -> tuple[Indices, Floats]:
        """The rows holding ``term`` and its count in each."""
        found = self._arrays.get(term)
        if found is None:
            held = self._postings.get(term)
            if not held:  # not kept: a term of no row would otherwise stay for every word ever asked
                return _NO_ROWS
            # Copies: a view would pin the buffers, and the next append to them would fail.
            found = self._arrays[term] = (np.array(held[0], dtype=np.intp), np.array(held[1], dtype=np.float64))
        return found

    def _grow(self) -> None:
        size = max(16, 2 * len(self._versions))

        def grown(a: npt.NDArray[Any]) -> npt.NDArray[Any]:
            out = np.zeros((size, *a.shape[1:]), dtype=a.dtype)
            out[:self.count] = a[:self.count]
            return out

        self._versions, self._valid_at, self._invalid_at = (
            grown(self._versions), grown(self._valid_at), grown(self._invalid_at))
        self._importance, self._lengths = grown(self._importance), grown(self._lengths)
        self._high, self._low, self._vectors = grown(self._high), grown(self._low), grown(self._vectors)
        self._labels = {name: grown(values) for name, values in self._labels.items()}

    def _append(self, row: dict[str, Any]) -> None:
        if self.count == len(self._versions):
            self._grow()
        at = self.count
        self.count += 1
        self._index[row["id"]] = at
        self._rows.append(())
        self._memories.append(None)
        self._terms.append(())
        key = row["id"].int
        self._high[at], self._low[at] = key >> _HALF, key & ((1 << _HALF) - 1)
        self._replace(at, row)

    def _replace(self, at: int, row: dict[str, Any]) -> None:
        scope = self._scopes.get(row["heroine_id"])
        if scope is None:
            scope = self._scopes[row["heroine_id"]] = Scope(row["user_id"], row["heroine_id"])
        held = memory_values(row, scope)
        for name in _INTERNED:
            held[name] = _shared(held[name])
        self._rows[at] = tuple(held[name] for name in _FIELDS)
        for name, values in self._labels.items():
            values[at] = _shared(row[name])
        self._memories[at] = None
        self._versions[at] = row["scope_version"]
        self._valid_at[at] = row["valid_at"].timestamp()
        self._invalid_at[at] = row["invalid_at"].timestamp() if row["invalid_at"] is not None else _NEVER
        self._importance[at] = row["importance"]
        self._vectors[at] = row["embedding"].to_numpy()
        terms = tuple(sys.intern(t) for t in row["terms"])  # one string per distinct term, not per row
        if terms != self._terms[at]:
            self._index_terms(at, terms)

    def _index_terms(self, at: int, terms: tuple[str, ...]) -> None:
        """Move row ``at`` from its old terms' postings to the new ones'."""
        for term in dict.fromkeys(self._terms[at]):
            rows, counts = self._postings[term]
            i = rows.index(at)
            del rows[i], counts[i]
            self._arrays.pop(term, None)
        self._terms[at] = terms
        self._lengths[at] = len(terms)
        for term, n in Counter(terms).items():
            rows, counts = self._postings.setdefault(term, (array("q"), array("d")))
            rows.append(at)
            counts.append(float(n))
            self._arrays.pop(term, None)
