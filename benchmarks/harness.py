"""What the engine-level benchmarks share: a caller-vector engine on a fresh database, and printing the figures."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import psycopg
from npc_memory.config import Config, DatabaseConfig
from npc_memory.embedding.settings import EmbeddingSettings
from pgvector.psycopg import register_vector
from psycopg.rows import dict_row


def caller_vector_config(database_url: str, dim: int) -> Config:
    """The service's configuration with callers' ``dim``-d vectors, on the database given or a fresh embedded one."""
    database = DatabaseConfig(url=database_url or None, data_dir=Path(tempfile.mkdtemp(prefix="npc-bench-")),
                              pool_min=1, pool_max=2)
    return replace(Config(), database=database, embedding=EmbeddingSettings(kind="none", dim=dim))


def emit(result: dict[str, Any], json_path: Path | None) -> None:
    """Print the figures as JSON, and write them to ``json_path`` too when given."""
    text = json.dumps(result, indent=2, default=str)
    if json_path:
        json_path.write_text(text + "\n", encoding="utf-8")
    print(text)


def in_checkout(src: Path, code: str, *argv: str) -> str:
    """What ``python -c code argv`` prints with an earlier checkout's ``service/`` (``git archive`` tree) importable."""
    env = {**os.environ, "PYTHONPATH": str(src / "service")}
    return subprocess.run([sys.executable, "-c", code, *argv], env=env, check=True, capture_output=True,
                          text=True).stdout


def generic_connection(url: str) -> psycopg.Connection[dict[str, Any]]:
    """A connection (dict rows, vectors) planning prepared statements generically, as the service's pool does."""
    conn = psycopg.connect(url, autocommit=True, row_factory=dict_row)
    register_vector(conn)
    conn.execute("SET plan_cache_mode = force_generic_plan")
    return conn


def before_after_parser(doc: str | None, count: str, default: int) -> argparse.ArgumentParser:
    """The options of an A/B against an earlier checkout on benchmarks.search_speed's database.

    ``--before-src`` (a ``git archive`` tree), ``--rows``, ``--<count>`` requests, ``--data-dir`` and ``--json``.
    """
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before-src", type=Path, required=True)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument(f"--{count}", type=int, default=default)
    parser.add_argument("--data-dir", type=Path, default=Path(tempfile.gettempdir()) / "npc-memory-speed")
    parser.add_argument("--json", type=Path)
    return parser
