"""The PGroonga keyword side: where the extension is installed, ``&@~`` with ``pgroonga_score`` replaces BM25.

PGroonga indexes the morpheme ``terms`` column (not the raw content): a natural Korean sentence searched with
``&@~`` finds nothing because particles break its bigrams, so the query is turned into the same morphemes the
rows hold, joined by OR. Everything else (scope, filters, dense and prior candidates, ranking) is the one
search statement of store/search_sql.py; the raw score is normalised there like BM25's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from psycopg import sql

from npc_memory.store.keyword import KeywordSide
from npc_memory.store.pool import Database
from npc_memory.store.view import SCOPE_ROWS

AVAILABLE = "SELECT 1 FROM pg_available_extensions WHERE name = 'pgroonga'"
CREATE_EXTENSION = "CREATE EXTENSION IF NOT EXISTS pgroonga"
# Built at start (not in a numbered migration, which would fail on servers without PGroonga).
CREATE_INDEX = "CREATE INDEX IF NOT EXISTS user_memories_terms_pgroonga ON user_memories USING pgroonga (terms)"

# pgroonga_score needs the rows found through the PGroonga index, so the match reads the table itself (same
# scope as scope_rows) rather than the materialised scope rows; the join with scope_rows applies the view and
# the filter, as the timeline sees each row.
CTES = sql.SQL(""",
groonga AS MATERIALIZED (
    SELECT m.id, pgroonga_score(m.tableoid, m.ctid)::float8 AS score
    FROM user_memories m
    WHERE m.terms &@~ %(pgroonga_query)s
      AND m.user_id = %(user_id)s AND {scope}
),
keyword AS (
    SELECT g.id, s.cosine, g.score FROM groonga g JOIN scope_rows s ON s.id = g.id
)""").format(scope=SCOPE_ROWS)


def pgroonga_query(terms: Sequence[str]) -> str:
    """The morphemes as a PGroonga query: each quoted (so no term reads as an operator), joined by OR."""
    quoted = ('"' + t.replace("\\", "\\\\").replace('"', '\\"') + '"' for t in dict.fromkeys(terms))
    return " OR ".join(quoted)


def pgroonga_params(terms: Sequence[str]) -> dict[str, Any]:
    """The query's morphemes as one PGroonga query."""
    return {"pgroonga_query": pgroonga_query(terms)}


PGROONGA = KeywordSide(sql.SQL(""), CTES, pgroonga_params)
"""PGroonga's full-text score over the morphemes, through its index."""


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
