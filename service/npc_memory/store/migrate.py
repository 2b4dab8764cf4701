"""Versioned migrations from ``migrations/NNNN_name.sql``, applied at start under an advisory lock."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from importlib import resources

import psycopg
import sqlparse

from npc_memory.errors import UnavailableError

log = logging.getLogger(__name__)

# Any constant works; it only has to be the same for every replica starting at once.
MIGRATION_LOCK_KEY = 0x6E70_636D_656D

CREATE_LEDGER = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)
"""
APPLIED = "SELECT version FROM schema_migrations"
RECORD = "INSERT INTO schema_migrations (version, name) VALUES (%(version)s, %(name)s)"


@dataclass(frozen=True)
class Migration:
    """One SQL file of the migrations folder."""

    version: int
    name: str
    sql: str

    def statements(self) -> list[str]:
        """The file's statements, each on its own (comments kept with the statement they precede).

        Citus forwards a DDL statement on a distributed table to the shards with the text of the query that held it:
        a file sent as one query reached each worker whole, which refuses several commands in one statement, so a
        migration adding a column failed on a cluster distributed before it.
        """
        return [s for s in sqlparse.split(self.sql) if sqlparse.format(s, strip_comments=True).strip()]


def available() -> list[Migration]:
    """Every migration shipped with the package, in version order."""
    folder = resources.files("npc_memory.store") / "migrations"
    found = []
    for entry in folder.iterdir():
        if entry.name.endswith(".sql"):
            version, _, rest = entry.name.partition("_")
            found.append(Migration(int(version), rest.removesuffix(".sql"), entry.read_text("utf-8")))
    return sorted(found, key=lambda m: m.version)


def migrate(url: str, target: int | None = None, connect_timeout: float = 10.0) -> list[int]:
    """Apply the missing migrations (up to ``target``, if given), each in its own transaction; return them.

    UnavailableError if the server cannot be reached within ``connect_timeout`` seconds.
    """
    try:
        # libpq takes whole seconds, and reads 0 as "wait forever".
        conn = psycopg.connect(url, autocommit=True, connect_timeout=max(1, round(connect_timeout)))
    except psycopg.OperationalError as exc:
        raise UnavailableError(f"database unreachable: {exc}") from exc
    applied_now: list[int] = []
    with conn:
        conn.execute("SELECT pg_advisory_lock(%(key)s)", {"key": MIGRATION_LOCK_KEY})
        try:
            conn.execute(CREATE_LEDGER)
            done = {row[0] for row in conn.execute(APPLIED)}
            for migration in available():
                if migration.version in done or (target is not None and migration.version > target):
                    continue
                with conn.transaction():
                    for statement in migration.statements():
                        conn.execute(statement.encode())
                    conn.execute(RECORD, {"version": migration.version, "name": migration.name})
                log.info("applied migration %04d_%s", migration.version, migration.name)
                applied_now.append(migration.version)
        finally:
            conn.execute("SELECT pg_advisory_unlock(%(key)s)", {"key": MIGRATION_LOCK_KEY})
    return applied_now
