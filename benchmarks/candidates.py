"""The service's candidate union, fetched unranked: the input of the Python reference (benchmarks/reference_scoring)."""

from __future__ import annotations

from collections.abc import Sequence

from npc_memory.domain.model import SearchQuery
from npc_memory.store.keyword import ResolvedKeywordBackend
from npc_memory.store.pool import Database
from npc_memory.store.rows import memory_from_row
from npc_memory.store.search_sql import candidate_statement, search_params

from benchmarks.reference_scoring import Candidate


async def search_candidates(
    db: Database, query: SearchQuery, terms: Sequence[str], per_side: int, backend: ResolvedKeywordBackend = "bm25"
) -> list[Candidate]:
    """The union of the best ``per_side`` dense, keyword and recency/importance matches, with raw signals.

    The same candidate SQL the service's search statement ranks, run through the same parameters.
    """
    statement = candidate_statement(query, terms, backend)
    async with db.connection() as conn:
        cur = await conn.execute(statement, search_params(query, terms, per_side, backend), prepare=True, binary=True)
        rows = await cur.fetchall()
    return [Candidate(memory_from_row(r), float(r["cosine"]), float(r["keyword_score"])) for r in rows]
