"""The Citus cluster of ``scripts/citus`` (a coordinator and two workers on localhost) and databases on it."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from psycopg import sql

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "citus"


@contextmanager
def running_cluster() -> Iterator[str]:
    """The coordinator's URL of a running cluster: started for the block (and stopped after) unless already up."""
    was_up = subprocess.run([SCRIPT, "status"], check=False).returncode == 0
    started = subprocess.run([SCRIPT, "up"], capture_output=True, text=True, timeout=300, check=False)
    assert started.returncode == 0, (
        f"scripts/citus up failed (scripts/build-extensions builds Citus):\n{started.stderr}")
    try:
        yield started.stdout.strip().splitlines()[-1]
    finally:
        if not was_up:
            subprocess.run([SCRIPT, "down"], timeout=120, check=True)


WORKERS = "SELECT nodename, nodeport FROM pg_dist_node WHERE groupid <> 0 ORDER BY nodeport"


def _node_url(coordinator_url: str, host: str, port: int, dbname: str) -> str:
    return psycopg.conninfo.make_conninfo(coordinator_url, host=host, port=port, dbname=dbname)


@contextmanager
def citus_database(coordinator_url: str, prefix: str) -> Iterator[str]:
    """A new database with Citus on the coordinator and every worker, its workers added; dropped on exit.

    Citus keeps its metadata per database, so a new database is made on each node, the extension created in
    each, and the workers added from the new database's coordinator, as an operator sets up a cluster.
    """
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(coordinator_url, autocommit=True) as conn:
        workers = [(str(h), int(p)) for h, p in conn.execute(WORKERS).fetchall()]
    coordinator = psycopg.conninfo.conninfo_to_dict(coordinator_url)
    nodes = [(str(coordinator["host"]), int(str(coordinator["port"]))), *workers]
    for host, port in nodes:
        with psycopg.connect(_node_url(coordinator_url, host, port, "postgres"), autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        with psycopg.connect(_node_url(coordinator_url, host, port, name), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION citus")
    url = _node_url(coordinator_url, *nodes[0], name)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT citus_set_coordinator_host(%s, %s)", nodes[0])
        for host, port in workers:
            conn.execute("SELECT citus_add_node(%s, %s)", (host, port))
    try:
        yield url
    finally:
        for host, port in reversed(nodes):
            with psycopg.connect(_node_url(coordinator_url, host, port, "postgres"), autocommit=True) as conn:
                conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
