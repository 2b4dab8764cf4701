"""The schema can be spread over servers by player: keys, foreign keys and statements all name user_id."""

from __future__ import annotations

import importlib
import os
import pkgutil
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from npc_memory import store
from npc_memory.errors import ConfigError
from npc_memory.store.citus import (
    distribute_for_citus,
    distribute_sql,
    exempt_tables,
    planned_tables,
    unplanned_tables,
    violations,
)
from npc_memory.store.migrate import available, migrate
from own_database import separate_database
from psycopg import sql

NPC_MEMORY = str(Path(sys.executable).with_name("npc-memory"))
KEY_RULE_VERSION = 5
"""The migration that made every key name the player."""


@pytest.fixture
def fresh_url(database_url: str) -> Iterator[str]:
    """A new, empty database on the test server, dropped afterwards."""
    with separate_database(database_url, "npc_schema") as url:
        yield url


def _migrate_before_key_rule(url: str) -> None:
    """Apply the migrations older than 0005, as a database created before it would hold them."""
    assert migrate(url, target=KEY_RULE_VERSION - 1) == [m.version for m in available() if m.version < KEY_RULE_VERSION]


INSERT_ROW = """
INSERT INTO user_memories (id, user_id, heroine_id, speaker, subject, subject_id, content_type, content,
                           content_key, importance, tier, embedding, embedding_model, valid_at, invalid_at,
                           close_reason, superseded_by)
VALUES (%(id)s, %(user_id)s, 'letia', 'user', 'user', 'user', 'preference', %(content)s, %(content)s, 5,
        'knowledge', '[1,0,0]', 'test/3', now() - interval '2 days', %(invalid_at)s, %(reason)s, %(successor)s)
"""


def _insert_chain(conn: psycopg.Connection[Any], user_id: str, successor_owner: str | None = None) -> list[uuid.UUID]:
    """An older version closed by a newer one; ``successor_owner`` puts the newer one under another player."""
    old, new = uuid.uuid4(), uuid.uuid4()
    conn.execute(INSERT_ROW, {"id": new, "user_id": successor_owner or user_id, "content": "고양이를 좋아함",
                              "invalid_at": None, "reason": None, "successor": None})
    conn.execute(INSERT_ROW, {"id": old, "user_id": user_id, "content": "강아지를 좋아함",
                              "invalid_at": "now", "reason": "superseded", "successor": new})
    return [old, new]


def test_migrated_schema_keeps_the_key_rule(fresh_url: str) -> None:
    """After every migration, each table holds user_id and each key and foreign key includes it."""
    migrate(fresh_url)
    with psycopg.connect(fresh_url) as conn:
        assert violations(conn) == []


def test_the_rule_check_reports_each_kind_of_break(fresh_url: str) -> None:
    """A table without user_id, a key or unique index without it, and a SET NULL foreign key are each reported."""
    with psycopg.connect(fresh_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE no_player (id int PRIMARY KEY)")
        conn.execute("""
            CREATE TABLE loose (user_id text NOT NULL, id int PRIMARY KEY, parent int,
                                UNIQUE (user_id, id))
        """)
        conn.execute("ALTER TABLE loose ADD CONSTRAINT loose_parent_fkey FOREIGN KEY (parent) REFERENCES loose (id)")
        conn.execute("CREATE UNIQUE INDEX loose_parent_unique ON loose (parent)")
        conn.execute("""
            CREATE TABLE nulling (user_id text NOT NULL, id int, parent int, PRIMARY KEY (user_id, id),
                                  FOREIGN KEY (user_id, parent) REFERENCES nulling (user_id, id)
                                      ON DELETE SET NULL (parent))
        """)
        conn.execute("CREATE TABLE swapped (user_id text NOT NULL, id text NOT NULL, PRIMARY KEY (user_id, id), "
                     "FOREIGN KEY (id, user_id) REFERENCES swapped (user_id, id))")
        found = violations(conn, exempt=[])
    assert found == [
        "loose: loose_parent_fkey: foreign key does not pair user_id with the referenced user_id",
        "loose: loose_parent_unique: unique index does not include user_id",
        "loose: loose_pkey: key does not include user_id",
        "loose: loose_pkey: unique index does not include user_id",
        "no_player: no_player_pkey: key does not include user_id",
        "no_player: no_player_pkey: unique index does not include user_id",
        "no_player: table: has no user_id column",
        "nulling: nulling_user_id_parent_fkey: foreign key sets columns to NULL or DEFAULT on delete or update",
        "swapped: swapped_id_user_id_fkey: foreign key does not pair user_id with the referenced user_id",
    ]


def test_schema_before_0005_broke_the_rule(fresh_url: str) -> None:
    """The keys of migrations 0001-0004 (primary key on id alone, SET NULL link) are what 0005 had to change."""
    _migrate_before_key_rule(fresh_url)
    with psycopg.connect(fresh_url) as conn:
        found = violations(conn)
    assert "user_memories: user_memories_pkey: key does not include user_id" in found
    assert "user_memories: user_memories_superseded_by_fkey: foreign key does not pair user_id with the " \
           "referenced user_id" in found


def test_0005_keeps_existing_rows_and_their_links(fresh_url: str) -> None:
    """Rows written before 0005 survive it with their version links, now checked per player."""
    _migrate_before_key_rule(fresh_url)
    with psycopg.connect(fresh_url, autocommit=True) as conn:
        old, new = _insert_chain(conn, "player-a")
        _insert_chain(conn, "player-b")
    assert migrate(fresh_url) == [m.version for m in available() if m.version >= KEY_RULE_VERSION]
    with psycopg.connect(fresh_url, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM user_memories").fetchone() == (4,)
        assert conn.execute("SELECT superseded_by FROM user_memories WHERE user_id = 'player-a' AND id = %s",
                            (old,)).fetchone() == (new,)
        assert violations(conn) == []
        with pytest.raises(psycopg.errors.ForeignKeyViolation):
            conn.execute("UPDATE user_memories SET superseded_by = %s WHERE user_id = 'player-b'", (new,))


def test_0005_refuses_a_cross_player_link_and_changes_nothing(fresh_url: str) -> None:
    """A link to another player's row fails the new foreign key; the migration rolls back whole."""
    _migrate_before_key_rule(fresh_url)
    with psycopg.connect(fresh_url, autocommit=True) as conn:
        _insert_chain(conn, "player-a", successor_owner="player-z")
    with pytest.raises(psycopg.errors.ForeignKeyViolation):
        migrate(fresh_url)
    with psycopg.connect(fresh_url) as conn:
        assert conn.execute("SELECT max(version) FROM schema_migrations").fetchone() == (KEY_RULE_VERSION - 1,)
        key = conn.execute("SELECT pg_get_constraintdef(oid) FROM pg_constraint "
                           "WHERE conname = 'user_memories_pkey'").fetchone()
        assert key == ("PRIMARY KEY (id)",)


def test_distribute_sql_names_every_table(fresh_url: str) -> None:
    """Each migrated table is distributed by user_id or made a reference table (the ledger aside)."""
    migrate(fresh_url)
    with psycopg.connect(fresh_url) as conn:
        assert unplanned_tables(conn) == []
        tables = {r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()").fetchall()}
    plan = planned_tables()
    assert set(plan) <= tables
    assert {"user_memories", "store_requests"} <= {t for t, kind in plan.items() if kind == "distributed"}
    for table in (t for t, kind in plan.items() if kind == "distributed"):
        assert re.search(rf"create_distributed_table\('{table}', 'user_id'", distribute_sql())
    assert exempt_tables() == ["schema_migrations", "service_settings"]


def test_distribute_for_citus_refuses_without_citus(fresh_url: str) -> None:
    """On a server without the citus extension nothing is distributed and the error says why."""
    migrate(fresh_url)
    with psycopg.connect(fresh_url, autocommit=True) as conn, pytest.raises(ConfigError, match="citus extension"):
        distribute_for_citus(conn)


def test_migrate_citus_command_migrates_then_refuses_without_citus(fresh_url: str) -> None:
    """`npc-memory migrate --citus` applies the migrations, then stops with one line naming what is missing."""
    env = {**os.environ, "NPC_MEMORY_DATABASE_URL": fresh_url, "NPC_MEMORY_EMBEDDER": "none",
           "NPC_MEMORY_EMBEDDING_DIM": "384", "NPC_MEMORY_LOG_LEVEL": "ERROR"}
    done = subprocess.run([NPC_MEMORY, "migrate", "--citus", "--shard-count", "64"], env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 2, done.stderr
    assert done.stdout.startswith("applied ")
    assert done.stderr.splitlines() == [
        "npc-memory: the citus extension is not installed in this database (CREATE EXTENSION citus first)"]
    with psycopg.connect(fresh_url) as conn:
        assert conn.execute("SELECT to_regclass('user_memories') IS NOT NULL").fetchone() == (True,)
    alone = subprocess.run([NPC_MEMORY, "migrate", "--shard-count", "64"], env=env, capture_output=True, text=True,
                           timeout=120, check=False)
    assert (alone.returncode, alone.stderr.strip()) == (
        2, "npc-memory: --shard-count needs --citus and a positive number")


# Statements that touch user_memories or store_requests without naming one player: maintenance passes over
# every player, never run for a request. On Citus each is a query to every shard.
ALL_PLAYERS = {
    "retention.SCOPES_OVER": "the maintenance pass finds the scopes over their retention limit",
    "idempotency.PRUNE": "the maintenance pass deletes expired idempotency keys of every player",
    "sweep.COUNT": "`npc-memory reembed` and `npc-memory retokenize` count every row",
    "reembed.PAGE": "`npc-memory reembed` walks every row in key order",
    "retokenize.PAGE": "`npc-memory retokenize` walks every row in key order",
    "players.RECENT_PLAYERS": "the inspector's first page lists the players written to most recently",
}

_TABLE_REF = re.compile(r"\b(?:FROM|JOIN|UPDATE)\s+(?:user_memories|store_requests)\b", re.IGNORECASE)
_PLAYER_PREDICATE = re.compile(r"\buser_id\s*=\s*%\(user_id\)s")
_INSERT = re.compile(r"\bINSERT\s+INTO\s+(?:user_memories|store_requests)\s*\(([^)]*)\)", re.IGNORECASE)


def _statements() -> dict[str, str]:
    """Every SQL constant of the store package (module.NAME, or module.NAME[key] for tables of variants)."""
    found: dict[str, str] = {}
    for info in pkgutil.walk_packages(store.__path__, store.__name__ + "."):
        module = importlib.import_module(info.name)
        short = info.name.removeprefix(store.__name__ + ".")
        for name, value in vars(module).items():
            if not name.isupper():
                continue
            items = value.items() if isinstance(value, dict) else [(None, value)]
            for key, item in items:
                text = item.as_string(None) if isinstance(item, sql.Composable) else item
                if isinstance(text, str) and re.search(r"\b(user_memories|store_requests)\b", text):
                    found[f"{short}.{name}" + (f"[{key}]" if key is not None else "")] = text
    return found


def test_every_request_statement_names_the_player() -> None:
    """Each reference to a player table in a request's statement comes with a user_id = %(user_id)s predicate."""
    statements = _statements()
    assert len(statements) > 20  # the walk found the store's statements
    unnamed = {
        name for name, text in statements.items()
        if len(_PLAYER_PREDICATE.findall(text)) < len(_TABLE_REF.findall(text))
    }
    assert unnamed == set(ALL_PLAYERS)
    for name, text in statements.items():
        for columns in _INSERT.findall(text):
            assert "user_id" in columns, name
