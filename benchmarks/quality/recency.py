"""The Korean fact set's weighted hybrid (default weights) under several recency half-lives, in one run.

    python -m benchmarks.quality.recency [--half-lives 20.79 90 180 365 0]

Loads the fact set once (as ``benchmarks.quality.run``), gathers each question's candidates once with the
service's SQL, then re-ranks the same candidates with each half-life (days; 0 = no recency decay). 20.79 is
the former default (``exp(-age / 30 days)``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from npc_memory.config import Config, DatabaseConfig
from npc_memory.domain.model import Weights
from npc_memory.server.runtime import open_engine
from npc_memory.store.embedded import EmbeddedPostgres

from benchmarks.quality import run as quality
from benchmarks.quality.generate import DATASET

NO_DECAY_DAYS = 1e12
"""A time scale no fact's age comes near: recency 1 for all."""


async def measure(url: str, data: dict[str, Any], half_lives: Sequence[float]) -> dict[str, dict[str, float]]:
    """R@k and MRR of the default weights for each half-life, on one load and one gathering."""
    async with open_engine(Config(database=DatabaseConfig(url=url, pool_min=1, pool_max=2))) as engine:
        ids = await quality.load(engine, data)
        asked = await quality.gather(engine, data, ids)
    out = {}
    for half_life in half_lives:
        scale = half_life / math.log(2) if half_life > 0 else NO_DECAY_DAYS
        rescaled = [replace(a, query=replace(a.query, recency_days=scale)) for a in asked]
        out[f"half-life {half_life:g} d" if half_life > 0 else "no recency decay"] = quality.score(
            rescaled, quality.Mode("weighted hybrid (default)", Weights()))
    return out


def main() -> None:
    """Run against a temporary embedded PostgreSQL and print the table."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--half-lives", type=float, nargs="+", default=[30 * math.log(2), 90, 180, 365, 0])
    args = parser.parse_args()
    data = json.loads(DATASET.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory(prefix="npc-quality-") as tmp:
        pg = EmbeddedPostgres(Path(tmp))
        try:
            results = asyncio.run(measure(pg.url, data, args.half_lives))
        finally:
            pg.stop()
    print(quality.table("weighted hybrid (default weights) by recency half-life", list(results.items())))


if __name__ == "__main__":
    main()
