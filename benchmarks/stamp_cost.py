"""What stamping each write with its scope's version (migration 0013) costs a store, the trigger on and off, one run.

    python -m benchmarks.stamp_cost [--rounds 20] [--singles 10] [--batch 32] [--scope-rows 300] [--json PATH]

The service's own store (MemoryEngine.store, with vectors the bundled model made before timing) into a scope
of ``--scope-rows`` memories on a fresh embedded PostgreSQL. Each round runs ``--singles`` single stores and
one batch of ``--batch`` facts with the stamping trigger enabled, then the same with it disabled (``ALTER TABLE
... DISABLE TRIGGER``: the table and the statements are the same, only the trigger differs), the order
alternating by round, and a store after each switch untimed (the statements are planned again). Prints p50 /
p95 of both and the ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from npc_memory.config import Config, DatabaseConfig
from npc_memory.domain.model import NewMemory, Scope
from npc_memory.engine import MemoryEngine
from npc_memory.server.runtime import open_engine

from benchmarks.harness import emit
from benchmarks.write import fact, percentiles, seed, texts, timed

SWITCH = "ALTER TABLE user_memories {} TRIGGER user_memories_scope_version"


async def _switch(engine: MemoryEngine, scope: Scope, on: bool, warm: NewMemory) -> None:
    """The trigger on or off, then one store untimed (its statements are planned again after the ALTER)."""
    async with engine.db.connection() as conn:
        await conn.execute(SWITCH.format("ENABLE" if on else "DISABLE"))
    await engine.store(scope, [warm])


async def run(rounds: int, singles: int, batch: int, scope_rows: int) -> dict[str, Any]:
    """Both settings, alternating by round; percentiles per setting and kind."""
    database = DatabaseConfig(data_dir=Path(tempfile.mkdtemp(prefix="npc-bench-")), pool_min=1, pool_max=2)
    async with open_engine(replace(Config(), database=database)) as engine:
        scope = Scope("stamp-cost", "letia")
        await seed(engine, scope, scope_rows)
        # Vectors made before timing: the stores below run no model.
        single_texts, batch_texts = texts(rounds * singles * 2, "단"), texts(rounds * batch * 2, "묶")
        single_vectors = await engine.embedder.embed_passages(single_texts)
        batch_vectors = await engine.embedder.embed_passages(batch_texts)
        warm = texts(rounds * 2 + 1, "켜")
        warm_vectors = await engine.embedder.embed_passages(warm)
        out: dict[str, list[float]] = {k: [] for k in ("single on", "single off", "batch on", "batch off")}
        s = b = 0
        for r in range(rounds):
            for on in ((True, False) if r % 2 == 0 else (False, True)):
                w = 2 * r + on
                await _switch(engine, scope, on, fact(w, warm[w], warm_vectors[w]))
                name = "on" if on else "off"
                for _ in range(singles):
                    f = fact(s, single_texts[s], single_vectors[s])
                    out[f"single {name}"].append(await timed(lambda f=f: engine.store(scope, [f])))  # type: ignore[misc]
                    s += 1
                facts = [fact(i, batch_texts[b + i], batch_vectors[b + i]) for i in range(batch)]
                b += batch
                out[f"batch {name}"].append(await timed(lambda fs=facts: engine.store(scope, fs)))  # type: ignore[misc]
        await _switch(engine, scope, True, fact(0, warm[-1], warm_vectors[-1]))
    figures: dict[str, Any] = {k: percentiles(v) for k, v in out.items()}
    for kind in ("single", "batch"):
        figures[f"{kind} on / off p50"] = figures[f"{kind} on"]["p50"] / figures[f"{kind} off"]["p50"]
    return figures


def main() -> None:
    """Run the A/B and print it."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--singles", type=int, default=10)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--scope-rows", type=int, default=300)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    emit(asyncio.run(run(args.rounds, args.singles, args.batch, args.scope_rows)), args.json)


if __name__ == "__main__":
    main()
