"""A held scope's rows as columns: what search/rank.py ranks and search/rows.py keeps up to date."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from npc_memory.domain.model import MemoryFilter

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


def wanted(flt: MemoryFilter) -> list[tuple[str, list[str]]]:
    """Each filtered column with the values it may hold (only the restrictions the filter makes)."""
    values = {"speaker": flt.speakers, "subject": flt.subjects, "subject_id": flt.subject_ids,
              "content_type": flt.content_types, "tier": flt.tiers, "slot": (flt.slot,) if flt.slot else ()}
    return [(name, [str(v) for v in values[name]]) for name in FILTERED if values[name]]
