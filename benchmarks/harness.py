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
from npc_memory.embedding.base import Embedder
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


class Told:
    """The engine's embedder, answering the engine's questions about its next call as told (None: as it would).

    ``wide=False``: a text search tokenises, checks the timeline and syncs the held scope beside the model, as
    every text search did before the twelfth round (2026-11-25). ``spare=False``: a store embeds, then tokenises
    and writes, as every store did before the thirteenth. The model's own call still runs as the machine lets it.
    """

    def __init__(self, inner: Embedder, *, wide: bool | None = None, spare: bool | None = None) -> None:
        self._inner = inner
        self._wide = wide
        self._spare = spare

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def runs_wide(self) -> bool:
        """As told, or as the embedder says."""
        return self._inner.runs_wide() if self._wide is None else self._wide

    def spares_a_core(self) -> bool:
        """As told, or as the embedder says."""
        return self._inner.spares_a_core() if self._spare is None else self._spare
