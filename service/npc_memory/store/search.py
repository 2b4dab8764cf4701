"""Search through the statement: gather the candidates, rank them with the scoring function, follow links.

The statement (store/search_sql.py) gathers; domain/scoring.py ranks; the link statement (store/search_links.py)
follows the ranked rows' links when the query asks for hops.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from npc_memory.domain import scoring
from npc_memory.domain.model import ScoredMemory, SearchQuery, Tier
from npc_memory.store.compiled import fetch_all
from npc_memory.store.keyword import ResolvedKeywordBackend
from npc_memory.store.pool import Database
from npc_memory.store.rows import memory_from_row
from npc_memory.store.search_links import link_places
from npc_memory.store.search_sql import compiled_links, compiled_search, search_params

LOW_BITS = (1 << 64) - 1
SOURCE = Tier.SOURCE.value


def gathered(rows: Sequence[dict[str, Any]], keyword_column: str | None = "keyword_score") -> scoring.Gathered:
    """The rows' raw signals as the scoring function's columns (``keyword_column`` None: no keyword score)."""
    ids = [r["id"].int for r in rows]
    return scoring.Gathered(
        cosine=np.fromiter((r["cosine"] for r in rows), np.float64, len(rows)),
        keyword=(np.zeros(len(rows)) if keyword_column is None
                 else np.fromiter((r[keyword_column] for r in rows), np.float64, len(rows))),
        valid_at=np.fromiter((r["valid_at"].timestamp() for r in rows), np.float64, len(rows)),
        importance=np.fromiter((r["importance"] for r in rows), np.float64, len(rows)),
        id_high=np.array([i >> 64 for i in ids], dtype=np.uint64),
        id_low=np.array([i & LOW_BITS for i in ids], dtype=np.uint64),
        turn=np.fromiter((r["tier"] == SOURCE for r in rows), np.bool_, len(rows)),
    )


def _hits(rows: Sequence[dict[str, Any]], ranked: scoring.Ranked, hops: Sequence[int] | None = None,
          ) -> list[ScoredMemory]:
    """The ranked rows as the domain's search hits, in the ranking's order."""
    out = []
    for at, scores in zip(ranked.positions.tolist(), ranked.scores(), strict=True):
        row = rows[at]
        out.append(ScoredMemory(memory_from_row(row), scores, cosine=float(row["cosine"]),
                                via_memory_id=row.get("via_memory_id"), hops=hops[at] if hops is not None else 0))
    return out


async def search_ranked(
    db: Database, query: SearchQuery, terms: Sequence[str], per_side: int, backend: ResolvedKeywordBackend
) -> list[ScoredMemory]:
    """The best ``query.limit`` memories with their scores: the candidates gathered in one round trip, then ranked.

    ``per_side`` rows are taken from each candidate list; ``backend`` scores the keyword side (unused when
    ``terms`` is empty). With ``hops``, a second round trip on the same connection follows the ranked rows' links.
    """
    params = search_params(query, terms, per_side, backend)
    async with db.connection() as conn:
        rows = await fetch_all(conn, compiled_search(query, terms, backend), params)
        hits = _hits(rows, scoring.rank(gathered(rows), query))
        places = link_places(query.limit, query.hops)
        if not hits or places == 0:
            return hits
        top = {"top_ids": [h.memory.id for h in hits], "top_scores": [h.scores.final for h in hits]}
        linked = await fetch_all(conn, compiled_links(query), params | top)
    reached = _reached(linked, query)[:places]
    return hits[:query.limit - len(reached)] + reached


def _reached(rows: Sequence[dict[str, Any]], query: SearchQuery) -> list[ScoredMemory]:
    """The memories the links reached, scored (``scoring.reached``), by hops and then their own score."""
    if not rows:
        return []
    hops = [int(r["hops"]) for r in rows]
    hits = _hits(rows, scoring.reached(gathered(rows, None), query), hops)
    return sorted(hits, key=lambda h: h.hops)  # stable: each hop's hits stay in score order
