"""What the engine-level benchmarks share: a caller-vector engine on a fresh database, and printing the figures."""

from __future__ import annotations

import json
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from npc_memory.config import Config, DatabaseConfig
from npc_memory.embedding.settings import EmbeddingSettings


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
