"""The export format covers every column of every table that holds a player's rows."""

from __future__ import annotations

import psycopg
from npc_memory.domain.portable import KINDS, NOT_EXPORTED
from npc_memory.engine import MemoryEngine

PLAYER_TABLES = """
SELECT c.table_name, array_agg(c.column_name::text ORDER BY c.ordinal_position) AS columns
FROM information_schema.columns c
WHERE c.table_schema = 'public'
  AND c.table_name IN (SELECT table_name FROM information_schema.columns WHERE column_name = 'user_id'
                                                                            AND table_schema = 'public')
GROUP BY c.table_name
"""
DERIVED = {"scope_versions"}
"""A scope's change counter: made again by the trigger as rows load, never exported."""


def test_every_player_column_is_exported(engine: MemoryEngine) -> None:
    """A column added to a player's table without a field in the export would be lost on a move: this fails first."""
    with psycopg.connect(engine.db.url) as conn:
        tables = {name: set(columns) for name, columns in conn.execute(PLAYER_TABLES)}
    exported = {kind.table: set(kind.columns()) | NOT_EXPORTED.get(kind.table, set()) for kind in KINDS}
    assert set(tables) - DERIVED == set(exported)
    for table, columns in exported.items():
        assert tables[table] == columns, table
