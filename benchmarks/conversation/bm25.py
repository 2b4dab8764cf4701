"""BM25's k1 and b on both benchmarks: the stores made once, every question asked again per setting.

    python -m benchmarks.conversation.bm25 [--json out.json]

The keyword side is Okapi BM25 with k1 1.2 and b 0.75 (store/search_bm25.py). Dialogue lines are short, and b
rewards a short line for holding a query word ("How have you been?" for "What shows have I been to?"), so the
length normalisation is worth measuring on conversations. The conversations are stored as the defaults store them
(``heldout-label``) and the Korean fact set as ``benchmarks.quality`` does; then for each (k1, b) every
conversation question goes through ``engine.search`` (the same question vectors each time) and every fact-set
question's candidates are fetched by the service's SQL and ranked by the reference score. The two constants are
statement parameters read per request (``bm25_params``), so the run sets them between passes. Each setting is
measured three ways: the default weighted ranking, the keyword side alone, and RRF.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from npc_memory.config import Config, DatabaseConfig
from npc_memory.domain import scoring
from npc_memory.domain.model import Fusion, SearchQuery, Weights
from npc_memory.engine import MemoryEngine
from npc_memory.server.runtime import open_engine

from benchmarks.conversation import metrics
from benchmarks.conversation.metrics import Answer
from benchmarks.conversation.readtime import stored_as_defaults
from benchmarks.conversation.run import Loaded, experiment_main
from benchmarks.quality import run as quality
from benchmarks.quality.generate import DATASET as FACTS
from benchmarks.quality.run import Mode

SETTINGS = ((1.2, 0.75), (1.2, 0.5), (1.2, 0.3), (1.2, 0.0), (0.6, 0.3), (2.0, 0.3))
"""(k1, b); the first is the service's."""
MODES = (Mode("hybrid", Weights()), Mode("keyword only", Weights(0.0, 0.0, 0.0, 1.0)),
         Mode("RRF", Weights(), Fusion.RRF))
"""The default ranking, the keyword side alone (where b matters most) and RRF."""


async def ask_conversations(engine: MemoryEngine, loaded: list[tuple[dict[str, Any], Loaded]],
                            vectors: dict[str, Any], mode: Mode) -> list[Answer]:
    """Every conversation question through ``engine.search`` in ``mode``, its first 15 hits."""
    answers = []
    for conv, lo in loaded:
        now = datetime.fromisoformat(conv["now"])
        for q in conv["questions"]:
            hits = await engine.search(SearchQuery(
                scope=lo.scope, text=q["text"], limit=15, weights=mode.weights, now=now, fusion=mode.fusion,
                embedding=vectors[q["id"]], recency_days=engine.search_settings.recency_days_for(lo.scope.heroine_id)))
            evidence = [None if t in lo.dropped else lo.memory_of[t] for t in q["evidence"]]
            answers.append(Answer(q["kind"], q["shape"], conv["language"], [h.memory.id for h in hits], evidence))
    return answers


async def run(url: str, data: dict[str, Any]) -> dict[str, Any]:
    """Store both benchmarks, then ask every question once per setting."""
    conv: dict[str, Any] = {}
    kor: dict[str, dict[str, float]] = {}
    async with open_engine(Config(database=DatabaseConfig(url=url, pool_min=1, pool_max=2))) as engine:
        asked, loaded = await stored_as_defaults(engine, data, "bm25:")
        questions = [q for c in data["conversations"] for q in c["questions"]]
        vectors = dict(zip([q["id"] for q in questions],
                           await engine.embedder.embed_queries([q["text"] for q in questions]), strict=True))
        facts = json.loads(FACTS.read_text(encoding="utf-8"))
        ids = await quality.load(engine, facts)
        defaults = scoring.BM25_K1, scoring.BM25_B
        try:
            for k1, b in SETTINGS:
                scoring.BM25_K1, scoring.BM25_B = k1, b
                gathered = await quality.gather(engine, facts, ids)
                for mode in MODES:
                    name = f"k1 {k1}, b {b}, {mode.name}"
                    conv[name] = metrics.figures(await ask_conversations(asked, loaded, vectors, mode))
                    kor[name] = quality.score(gathered, mode)
        finally:
            scoring.BM25_K1, scoring.BM25_B = defaults
    return {"conversations": conv, "korean_facts": kor}


def report(results: dict[str, Any]) -> str:
    """Conversation R@10 by kind and language beside the fact set's R@1/5/10, one row per setting."""
    lines = ["| BM25, ranking | conversations R@10 | multi | single | time | update | en | ko | Korean R@1 | R@5 "
             "| R@10 |", "|---|" + "---:|" * 10]
    for name, f in results["conversations"].items():
        k = results["korean_facts"][name]
        cells = [f["all"]["R@10"], *(f["by_kind"][kind]["R@10"] for kind in ("multi", "single", "time", "update")),
                 *(f["by_language"][lang]["R@10"] for lang in ("en", "ko")), k["R@1"], k["R@5"], k["R@10"]]
        lines.append(f"| {name} | " + " | ".join(f"{c:.3f}" for c in cells) + " |")
    return "\n".join(lines)


def main() -> None:
    """Run against a temporary embedded PostgreSQL and print the table."""
    experiment_main(__doc__ or "", "npc-bm25-", run, report)


if __name__ == "__main__":
    main()
