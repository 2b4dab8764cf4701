"""What a keyword backend gives the search statement: its CTE, the scope columns that CTE reads, its parameters."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from psycopg import sql

ResolvedKeywordBackend = Literal["bm25", "pgroonga"]
"""The keyword backend a running service searches with (``auto`` already decided at start)."""


@dataclass(frozen=True)
class KeywordSide:
    """One backend's part of the search statement.

    ``ctes`` continues the WITH list after ``scope_rows`` (it starts with a comma) and ends with a CTE named
    ``keyword`` of ``(id, cosine, score)``: the rows holding a query term, each with its cosine taken from
    ``scope_rows`` (so the final select never joins back over the scope) and its raw keyword score. With
    ``every_row`` it holds every scope row instead (score 0 where no term matches) with ``valid_at`` and
    ``prior`` too, and the statement takes all its candidate lists from it.
    """

    scope_columns: sql.Composable
    """Columns ``scope_rows`` must carry for ``ctes``, each followed by a comma (empty when none)."""
    ctes: sql.Composable
    params: Callable[[Sequence[str]], dict[str, Any]]
    """The CTE's own named parameters for the query's terms."""
    every_row: bool = False
    """Whether ``keyword`` scores every scope row (so no list reads ``scope_rows`` and no scores are regrouped)."""
