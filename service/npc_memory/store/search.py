"""Search: run the one search statement (store/search_sql.py) and turn its ranked rows into hits."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from npc_memory.domain.model import ScoredMemory, Scores, SearchQuery
from npc_memory.store.compiled import fetch_all
from npc_memory.store.keyword import ResolvedKeywordBackend
from npc_memory.store.pool import Database
from npc_memory.store.rows import memory_from_row
from npc_memory.store.search_sql import compiled_search, search_params


def scored_from_row(row: dict[str, Any]) -> ScoredMemory:
    """A ranked row as the domain's search hit."""
    return ScoredMemory(
        memory_from_row(row),
        Scores(
            recency=float(row["s_recency"]), importance=float(row["s_importance"]),
            relevance=float(row["s_relevance"]), keyword=float(row["s_keyword"]), final=float(row["s_final"]),
        ),
        cosine=float(row["cosine"]),
        via_memory_id=row.get("via_memory_id"),
        hops=int(row.get("hops", 0)),
    )


async def search_ranked(
    db: Database, query: SearchQuery, terms: Sequence[str], per_side: int, backend: ResolvedKeywordBackend
) -> list[ScoredMemory]:
    """The best ``query.limit`` memories with their scores, gathered and ranked in one round trip.

    ``per_side`` rows are taken from each candidate list; ``backend`` scores the keyword side (unused when
    ``terms`` is empty).
    """
    statement = compiled_search(query, terms, backend)
    params = search_params(query, terms, per_side, backend)
    async with db.connection() as conn:
        rows = await fetch_all(conn, statement, params)
    return [scored_from_row(r) for r in rows]
