"""The PGroonga keyword side: where the extension is installed, ``&@~`` with ``pgroonga_score`` replaces BM25.

PGroonga indexes the morpheme ``terms`` column (not the raw content): a natural Korean sentence searched with
``&@~`` finds nothing because particles break its bigrams, so the query is turned into the same morphemes the
rows hold, joined by OR. Dense and prior sides, filters and the [0, 1] contract (the score over the best
score among the candidates, in domain/scoring.py) are those of store/search.py.
"""

from __future__ import annotations

from collections.abc import Sequence

from psycopg import sql

from npc_memory.domain.model import ScoredMemory, SearchQuery
from npc_memory.store.filters import MEMORY_FILTER
from npc_memory.store.pool import Database
from npc_memory.store.ranking import ranked, ranking_params, scored_from_row
from npc_memory.store.rows import MEMORY_COLUMNS
from npc_memory.store.search import _COSINE, _DENSE_TOP, _PRIOR_TOP, search_params

AVAILABLE = "SELECT 1 FROM pg_available_extensions WHERE name = 'pgroonga'"
CREATE_EXTENSION = "CREATE EXTENSION IF NOT EXISTS pgroonga"
# Built at start (not in a numbered migration, which would fail on servers without PGroonga).
CREATE_INDEX = "CREATE INDEX IF NOT EXISTS user_memories_terms_pgroonga ON user_memories USING pgroonga (terms)"

_SCOPE = """
scope_rows AS MATERIALIZED (
    SELECT m.id, {cosine} AS cosine,
           %(w_recency)s * exp(-GREATEST(%(now_epoch)s - date_part('epoch', m.valid_at), 0.0::float8)
                               / %(recency_seconds)s)
             + %(w_importance)s * m.importance * 0.1::float8 AS prior
    FROM user_memories m
    WHERE m.user_id = %(user_id)s AND m.heroine_id = %(heroine_id)s AND {filter}
),
keyword AS MATERIALIZED (
    SELECT m.id, pgroonga_score(m.tableoid, m.ctid)::float8 AS score
    FROM user_memories m
    WHERE m.terms &@~ %(pgroonga_query)s
      AND m.user_id = %(user_id)s AND m.heroine_id = %(heroine_id)s AND {filter}
),
kw AS (
    SELECT k.id, s.cosine, k.score FROM keyword k JOIN scope_rows s ON s.id = k.id
),
candidates AS (
    {dense}(SELECT id, cosine FROM kw ORDER BY score DESC LIMIT %(k)s) UNION {prior}
)
SELECT {columns}, c.cosine, COALESCE(kw.score, 0.0::float8) AS bm25
FROM candidates c
LEFT JOIN kw ON kw.id = c.id
JOIN user_memories m ON m.user_id = %(user_id)s AND m.id = c.id
"""


def _statement(has_vector: bool) -> sql.Composed:
    body = sql.SQL(_SCOPE).format(
        cosine=sql.SQL(_COSINE if has_vector else "0.0::float8"),
        filter=MEMORY_FILTER,
        dense=sql.SQL(_DENSE_TOP if has_vector else ""),
        prior=sql.SQL(_PRIOR_TOP),
        columns=MEMORY_COLUMNS,
    )
    return sql.Composed([sql.SQL("WITH"), body])


CANDIDATES = {v: _statement(v) for v in (False, True)}
"""The PGroonga search statement, by whether the query has a vector (a query without terms uses search.py)."""


def pgroonga_query(terms: Sequence[str]) -> str:
    """The morphemes as a PGroonga query: each quoted (so no term reads as an operator), joined by OR."""
    quoted = ('"' + t.replace("\\", "\\\\").replace('"', '\\"') + '"' for t in dict.fromkeys(terms))
    return " OR ".join(quoted)


async def pgroonga_available(db: Database) -> bool:
    """Whether the server can install the pgroonga extension."""
    async with db.connection() as conn:
        cur = await conn.execute(AVAILABLE)
        return await cur.fetchone() is not None


async def prepare_pgroonga(db: Database) -> None:
    """Install the extension and build the terms index if missing (idempotent, run at start)."""
    async with db.connection() as conn:
        await conn.execute(CREATE_EXTENSION)
        await conn.execute(CREATE_INDEX)


RANKED = {key: ranked(statement) for key, statement in CANDIDATES.items()}
"""The PGroonga statements ranked in SQL: what the service runs."""


async def search_ranked(db: Database, query: SearchQuery, terms: Sequence[str], per_side: int) -> list[ScoredMemory]:
    """As store.search.search_ranked, with PGroonga's score as the raw keyword signal."""
    params = search_params(query, terms, per_side) | ranking_params(query) | {"pgroonga_query": pgroonga_query(terms)}
    async with db.connection() as conn:
        cur = await conn.execute(RANKED[query.embedding is not None], params, prepare=True, binary=True)
        rows = await cur.fetchall()
    return [scored_from_row(r) for r in rows]
