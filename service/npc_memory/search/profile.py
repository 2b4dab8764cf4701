"""A context block's profile rows picked from a held scope's columns, as the profile statement picks them.

store/context.py's statement reads the scope's rows valid at a time that are about the player, about this heroine,
or events, most important first, then the newest, then the smallest id. A scope held in memory (search/held.py)
has those columns already, brought to the table's state by the search's sync, so a block of a held scope needs no
second read.
"""

from __future__ import annotations

from datetime import datetime

import numpy as np

from npc_memory.domain.model import ContentType, Memory, Scope, Subject
from npc_memory.search.columns import Indices, ScopeColumns
from npc_memory.search.rows import ScopeRows


def profile_positions(cols: ScopeColumns, heroine_id: str, at: float, limit: int) -> Indices:
    """The positions of up to ``limit`` profile rows valid at ``at`` (epoch seconds), in the statement's order."""
    n = cols.count
    subject, subject_id = cols.labels["subject"][:n], cols.labels["subject_id"][:n]
    about = ((subject == Subject.USER.value) | ((subject == Subject.HEROINE.value) & (subject_id == heroine_id))
             | (cols.labels["content_type"][:n] == ContentType.EVENT.value))
    rows = np.flatnonzero(about & (cols.valid_at[:n] <= at) & (cols.invalid_at[:n] > at))
    # lexsort's last key sorts first: importance descending, then valid_at descending, then the id as uuids sort.
    order = np.lexsort((cols.id_low[rows], cols.id_high[rows], -cols.valid_at[rows], -cols.importance[rows]))
    return rows[order[:limit]]


def held_profile(rows: ScopeRows, scope: Scope, at: datetime, limit: int) -> list[Memory]:
    """``profile_rows`` from a scope's rows held in memory as a sync just left them (with shared ones, if held so)."""
    return [rows.memory(i) for i in profile_positions(rows.columns(), scope.heroine_id, at.timestamp(), limit).tolist()]
