"""Upgrading a cluster: migrations shipped after the tables were distributed reach every shard and every worker."""

from __future__ import annotations

import psycopg
from citus_cluster import citus_database, running_cluster
from npc_memory.store.citus import distribute_for_citus
from npc_memory.store.migrate import available, migrate

DISTRIBUTED_AT = 17
"""A release's last migration: the cluster was distributed then, and later migrations came with upgrades."""

FUNCTION_ON_WORKERS = """
SELECT nodeport, result FROM run_command_on_workers(
    $$SELECT md5(prosrc) FROM pg_proc WHERE proname = 'reset_scope_versions'$$) ORDER BY nodeport
"""
COLUMNS_ON_SHARDS = """
SELECT DISTINCT result FROM run_command_on_placements('user_memories',
    $$SELECT string_agg(column_name, ',' ORDER BY column_name) FROM information_schema.columns
      WHERE table_name = '%s'$$)
"""
COLUMNS_HERE = """
SELECT string_agg(column_name, ',' ORDER BY column_name) FROM information_schema.columns
WHERE table_name = 'user_memories' AND table_schema = current_schema()
"""


def test_later_migrations_reach_the_shards_and_the_workers() -> None:
    """After distribution, each later migration applies: shards get its columns, workers its functions."""
    with running_cluster(), citus_database("npc_upgrade") as url:
        migrate(url, target=DISTRIBUTED_AT)
        with psycopg.connect(url, autocommit=True) as conn:
            distribute_for_citus(conn)
        later = [m.version for m in available() if m.version > DISTRIBUTED_AT]
        assert later  # the test is about them
        assert migrate(url) == later
        with psycopg.connect(url, autocommit=True) as conn:
            here = conn.execute(COLUMNS_HERE).fetchone()
            assert conn.execute(COLUMNS_ON_SHARDS).fetchall() == [here]
            source = conn.execute("SELECT md5(prosrc) FROM pg_proc WHERE proname = 'reset_scope_versions'").fetchone()
            assert source is not None
            assert [r for _, r in conn.execute(FUNCTION_ON_WORKERS).fetchall()] == [source[0]] * 2
