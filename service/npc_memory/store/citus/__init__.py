"""Spreading the schema over a Citus cluster by player: the key rule it rests on, and the distribution step.

A distributed PostgreSQL enforces a key only inside one shard, so every table holding player data carries
``user_id`` and every primary key, unique constraint and foreign key includes it (migration 0005).
``violations`` checks that rule in pg_catalog; ``distribute_for_citus`` applies ``distribute.sql`` (also
usable as ``psql -f``) after checking it.
"""

from __future__ import annotations

import re
from importlib import resources
from typing import Any

import psycopg

from npc_memory.errors import ConfigError

LEDGER = "schema_migrations"
"""The migration ledger: read and written by the migrator on the coordinator only, so never distributed."""

_PLANNED = re.compile(r"create_(distributed|reference)_table\('(\w+)'")

# One row per broken rule, over the tables of the current schema that extensions did not create, minus the
# exempt ones (reference tables hold no player data; the ledger stays on the coordinator). Citus also needs
# user_id at the same position on both sides of a foreign key, and refuses SET NULL / SET DEFAULT actions on
# a foreign key that holds the distribution column.
VIOLATIONS = """
WITH t AS (
    SELECT c.oid, c.relname,
           (SELECT a.attnum FROM pg_attribute a
            WHERE a.attrelid = c.oid AND a.attname = 'user_id' AND NOT a.attisdropped) AS uid
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')
      AND NOT EXISTS (SELECT 1 FROM pg_depend d
                      WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e')
      AND c.relname <> ALL(%(exempt)s::text[])
),
fk AS (
    SELECT t.relname, con.conname, con.conkey, con.confkey, con.confdeltype, con.confupdtype, t.uid,
           (SELECT a.attnum FROM pg_attribute a
            WHERE a.attrelid = con.confrelid AND a.attname = 'user_id' AND NOT a.attisdropped) AS ref_uid
    FROM t JOIN pg_constraint con ON con.conrelid = t.oid AND con.contype = 'f'
)
SELECT relname AS table_name, 'table' AS object, 'has no user_id column' AS problem
FROM t WHERE uid IS NULL
UNION ALL
SELECT t.relname, con.conname, 'key does not include user_id'
FROM t JOIN pg_constraint con ON con.conrelid = t.oid AND con.contype IN ('p', 'u', 'x')
WHERE t.uid IS NULL OR NOT t.uid = ANY(con.conkey)
UNION ALL
SELECT t.relname, i.indexrelid::regclass::text, 'unique index does not include user_id'
FROM t JOIN pg_index i ON i.indrelid = t.oid AND i.indisunique
WHERE t.uid IS NULL OR NOT t.uid = ANY(i.indkey::int2[])
UNION ALL
SELECT relname, conname, 'foreign key does not pair user_id with the referenced user_id'
FROM fk
WHERE uid IS NULL OR ref_uid IS NULL
   OR array_position(conkey, uid) IS DISTINCT FROM array_position(confkey, ref_uid)
   OR array_position(conkey, uid) IS NULL
UNION ALL
SELECT relname, conname, 'foreign key sets columns to NULL or DEFAULT on delete or update'
FROM fk
WHERE confdeltype IN ('n', 'd') OR confupdtype IN ('n', 'd')
ORDER BY 1, 2, 3
"""

TABLES = """
SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')
  AND NOT EXISTS (SELECT 1 FROM pg_depend d
                  WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e')
ORDER BY 1
"""

CITUS_INSTALLED = "SELECT 1 FROM pg_extension WHERE extname = 'citus'"
SET_SHARD_COUNT = "SELECT set_config('citus.shard_count', %(n)s, true)"


def distribute_sql() -> str:
    """The text of ``distribute.sql``."""
    return (resources.files(__name__) / "distribute.sql").read_text("utf-8")


def planned_tables(text: str | None = None) -> dict[str, str]:
    """Each table ``distribute.sql`` names, with how: ``distributed`` (by user_id) or ``reference``."""
    return {name: kind for kind, name in _PLANNED.findall(distribute_sql() if text is None else text)}


def exempt_tables() -> list[str]:
    """Tables the key rule does not apply to: the reference tables and the migration ledger."""
    return sorted([name for name, kind in planned_tables().items() if kind == "reference"] + [LEDGER])


def violations(conn: psycopg.Connection[Any], exempt: list[str] | None = None) -> list[str]:
    """Every table, key or foreign key of the current schema that breaks the key rule, as readable lines."""
    rows = conn.execute(VIOLATIONS, {"exempt": exempt_tables() if exempt is None else exempt}).fetchall()
    return [f"{table}: {obj}: {problem}" for table, obj, problem in rows]


def unplanned_tables(conn: psycopg.Connection[Any]) -> list[str]:
    """Tables of the schema that ``distribute.sql`` does not name (the ledger aside)."""
    planned = planned_tables()
    return [name for (name,) in conn.execute(TABLES).fetchall() if name not in planned and name != LEDGER]


def distribute_for_citus(conn: psycopg.Connection[Any], shard_count: int | None = None) -> None:
    """Check the key rule, then distribute every table as ``distribute.sql`` says, in one transaction.

    Run on the coordinator after the migrations. ``shard_count`` overrides citus.shard_count (32 by default)
    for the tables distributed now. ConfigError if Citus is not installed in this database or the schema
    breaks the rule (nothing is changed then).
    """
    if conn.execute(CITUS_INSTALLED).fetchone() is None:
        raise ConfigError("the citus extension is not installed in this database (CREATE EXTENSION citus first)")
    problems = violations(conn) + [f"{t}: not named in distribute.sql" for t in unplanned_tables(conn)]
    if problems:
        raise ConfigError("the schema cannot be distributed by user_id: " + "; ".join(problems))
    with conn.transaction():
        if shard_count is not None:
            conn.execute(SET_SHARD_COUNT, {"n": str(shard_count)})
        conn.execute(distribute_sql().encode())
