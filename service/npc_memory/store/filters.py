"""The WHERE fragment shared by search and listing: validity in business time and the request's filter."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from psycopg import sql

from npc_memory.domain.model import MemoryFilter

# Static SQL: an absent filter is passed as NULL, so one statement (and one cached plan) serves every request.
# Validity is two conjuncts so the invalid_at one reaches a timeline's change entries (store/view.py) before
# their rows are fetched: a row closed after a save point is skipped without reading it.
MEMORY_FILTER = sql.SQL("""
    (%(include_invalidated)s OR m.valid_at <= %(at)s)
    AND (%(include_invalidated)s OR m.invalid_at IS NULL OR m.invalid_at > %(at)s)
    AND (%(speakers)s::text[] IS NULL OR m.speaker = ANY(%(speakers)s))
    AND (%(subjects)s::text[] IS NULL OR m.subject = ANY(%(subjects)s))
    AND (%(subject_ids)s::text[] IS NULL OR m.subject_id = ANY(%(subject_ids)s))
    AND (%(content_types)s::text[] IS NULL OR m.content_type = ANY(%(content_types)s))
    AND (%(tiers)s::text[] IS NULL OR m.tier = ANY(%(tiers)s))
    AND m.importance >= %(min_importance)s
    AND (%(slot)s::text IS NULL OR m.slot = %(slot)s)
""")


def filter_params(flt: MemoryFilter, at: datetime, include_invalidated: bool) -> dict[str, Any]:
    """Parameters for MEMORY_FILTER: rows valid at ``at`` (or any row) matching ``flt``."""

    def values(items: tuple[Any, ...]) -> list[str] | None:
        return [str(i) for i in items] if items else None

    return {
        "include_invalidated": include_invalidated,
        "at": at,
        "speakers": values(flt.speakers),
        "subjects": values(flt.subjects),
        "subject_ids": values(flt.subject_ids),
        "content_types": values(flt.content_types),
        "tiers": values(flt.tiers),
        "min_importance": flt.min_importance,
        "slot": flt.slot,
    }
