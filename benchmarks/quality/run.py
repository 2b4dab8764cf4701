"""Korean retrieval quality: recall@1/5/10 and MRR for dense, keyword, weighted hybrid and RRF in one run.

    python -m benchmarks.quality.run [--database-url URL] [--json results.json]

Loads benchmarks/quality/dataset.json into a fresh embedded PostgreSQL (or a new database on --database-url) twice,
one fact per request and in mixed-speaker batches (``WAYS``: the same figures either way, since StoreMemories never
reads a batch as a dialogue), the service embedding each fact with the bundled multilingual-e5-small; for every
question gathers the candidates once (the service's own candidate SQL, BM25 keyword side) and ranks them every way
compared: the service's way with its own scoring function (npc_memory.domain.scoring, through
benchmarks/candidates.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import numpy as np
from npc_memory.config import Config, DatabaseConfig
from npc_memory.domain.model import (
    ContentType,
    Fusion,
    NewMemory,
    Scope,
    SearchQuery,
    Speaker,
    Subject,
    Vector,
    Weights,
)
from npc_memory.engine import MemoryEngine
from npc_memory.server.runtime import open_engine
from npc_memory.store.embedded import EmbeddedPostgres

from benchmarks.candidates import (
    DEFAULT_CALIBRATION,
    Calibration,
    Candidate,
    RelevanceCalibration,
    rank,
    search_candidates,
)
from benchmarks.quality.generate import DATASET

K = (1, 5, 10)


@dataclass(frozen=True)
class Mode:
    """One way of ranking the same candidates."""

    name: str
    weights: Weights
    fusion: Fusion = Fusion.WEIGHTED
    calibration: RelevanceCalibration = DEFAULT_CALIBRATION


@dataclass
class Asked:
    """A question with its gathered candidates and the ids that answer it."""

    kind: str
    query: SearchQuery
    candidates: list[Candidate]
    expected: set[UUID]


def _fact(f: dict[str, Any], valid_at: datetime, vec: Vector | None) -> NewMemory:
    return NewMemory(
        speaker=Speaker(f["speaker"]), subject=Subject(f["subject"]), subject_id=f["subject_id"],
        content_type=ContentType(f["content_type"]), content=f["content"], importance=f["importance"],
        slot=f["slot"], valid_at=valid_at, embedding=vec,
    )


BATCH = 20
"""Facts per request in the batched way: a day's worth a game learns (or an extraction job returns) at once."""

WAYS = {"one per request": False, "mixed-speaker batches": True}
"""The two ways the facts are stored, each into its own scopes; the figures must be the same."""


def mixed_batches(facts: Sequence[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """A scope's facts as requests of ``BATCH``, the player's and the heroine's taking turns while both have some.

    Such a request once read as a dialogue (short lines, the speaker changing between most of them) and its facts
    were embedded with their neighbours; it stores facts like any other now. The write plan places each fact in
    its slot's timeline by its own valid_at, so the order within and across requests changes no stored row.
    """
    user = [f for f in facts if f["speaker"] == "user"]
    heroine = [f for f in facts if f["speaker"] != "user"]
    mixed: list[dict[str, Any]] = []
    while user or heroine:
        for side in (user, heroine):
            if side:
                mixed.append(side.pop(0))
    return [mixed[i:i + BATCH] for i in range(0, len(mixed), BATCH)]


async def load(engine: MemoryEngine, data: dict[str, Any], batched: bool = False, prefix: str = "",
               ) -> dict[tuple[str, str, str], UUID]:
    """Store every fact (the service embeds each alone); map (user, heroine, key) to the memory id.

    One fact per request in game-day order, or (``batched``) ``mixed_batches``; scopes' user ids get ``prefix``.
    """
    start = datetime.fromisoformat(data["start"])
    ids: dict[tuple[str, str, str], UUID] = {}
    for s in data["scopes"]:
        scope = Scope(prefix + s["user_id"], s["heroine_id"])
        batches = mixed_batches(s["facts"]) if batched else [[f] for f in s["facts"]]
        for fs in batches:
            results = await engine.store(scope, [_fact(f, start + timedelta(days=f["day"]), None) for f in fs])
            for f, result in zip(fs, results, strict=True):
                if result.outcome.value == "duplicate":
                    print(f"warning: {f['key']} ({f['content']}) stored as a duplicate")
                ids[(s["user_id"], s["heroine_id"], f["key"])] = result.memory_id
    return ids


async def gather(engine: MemoryEngine, data: dict[str, Any], ids: dict[tuple[str, str, str], UUID],
                 prefix: str = "") -> list[Asked]:
    """Embed and tokenise every question and fetch its candidates with the service's SQL (scopes as ``load``'s)."""
    now = datetime.fromisoformat(data["start"]) + timedelta(days=data["now_day"])
    asked = []
    for s in data["scopes"]:
        scope = Scope(prefix + s["user_id"], s["heroine_id"])
        vectors = await engine.embedder.embed_queries([q["text"] for q in s["questions"]])
        for q, vec in zip(s["questions"], vectors, strict=True):
            query = SearchQuery(scope=scope, text=q["text"], limit=10, weights=Weights(), now=now, embedding=vec)
            terms = engine.tokenizer.query_terms(q["text"])
            query = engine.with_period(query)
            candidates = await search_candidates(engine.db, query, terms, engine.search_settings.candidates)
            expected = {ids[(s["user_id"], s["heroine_id"], k)] for k in q["expected"]}
            asked.append(Asked(q["kind"], query, candidates, expected))
    return asked


def score(asked: Sequence[Asked], mode: Mode) -> dict[str, float]:
    """recall@k and MRR@10 of one mode over the questions."""
    sums: dict[str, float] = defaultdict(float)
    for a in asked:
        hits = rank(a.candidates, replace(a.query, weights=mode.weights, fusion=mode.fusion), mode.calibration)
        ranked = [h.memory.id for h in hits]
        for k in K:
            sums[f"R@{k}"] += len(a.expected & set(ranked[:k])) / len(a.expected)
        sums["MRR"] += next((1.0 / (i + 1) for i, mid in enumerate(ranked) if mid in a.expected), 0.0)
    return {name: total / len(asked) for name, total in sums.items()}


def learned_floor(asked: Sequence[Asked]) -> float:
    """The median cosine between a question and the memories of its scope that do not answer it."""
    wrong = [c.cosine for a in asked for c in a.candidates if c.memory.id not in a.expected]
    return float(np.median(wrong))


def modes(floor: float, extra: Sequence[Weights] = ()) -> tuple[list[Mode], list[Mode]]:
    """The four side-by-side modes (and weighted hybrids with ``extra`` weights), and the calibrations compared."""
    main = [*(Mode(f"weighted {w.recency}/{w.importance}/{w.relevance}/{w.keyword}", w) for w in extra),
        Mode("dense only", Weights(0.0, 0.0, 1.0, 0.0)),
        Mode("keyword only (BM25)", Weights(0.0, 0.0, 0.0, 1.0)),
        Mode("weighted hybrid (default)", Weights()),
        Mode("RRF (default weights)", Weights(), Fusion.RRF),
    ]
    calibrations = [
        Mode("raw cosine", Weights(), calibration=RelevanceCalibration(Calibration.RAW)),
        Mode("min-max over candidates", Weights(), calibration=RelevanceCalibration(Calibration.MINMAX)),
        Mode(f"floor {floor:.3f} (median wrong-pair cosine)", Weights(),
             calibration=RelevanceCalibration(Calibration.FLOOR, floor)),
        Mode("floor 0.750 (a fixed low end for e5 cosines)", Weights(),
             calibration=RelevanceCalibration(Calibration.FLOOR, 0.75)),
    ]
    return main, calibrations


def table(title: str, rows: Sequence[tuple[str, dict[str, float]]]) -> str:
    """A markdown table of metric rows."""
    cols = [f"R@{k}" for k in K] + ["MRR"]
    lines = [f"| {title} | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
    lines += [f"| {name} | " + " | ".join(f"{m[c]:.3f}" for c in cols) + " |" for name, m in rows]
    return "\n".join(lines)


def figures(asked: Sequence[Asked], main_modes: Sequence[Mode], cal_modes: Sequence[Mode]) -> dict[str, Any]:
    """Every mode's and calibration's figures, overall and by question kind."""
    out: dict[str, Any] = {"modes": {m.name: score(asked, m) for m in main_modes},
                           "calibration": {m.name: score(asked, m) for m in cal_modes}, "by_kind": {}}
    for kind in sorted({a.kind for a in asked}):
        subset = [a for a in asked if a.kind == kind]
        out["by_kind"][f"{kind} ({len(subset)})"] = {m.name: score(subset, m) for m in main_modes}
    return out


async def run(url: str, data: dict[str, Any], extra: Sequence[Weights] = ()) -> dict[str, Any]:
    """Load the facts both ways (``WAYS``), ask, and score every mode of each; the first way's figures lead."""
    config = Config(database=DatabaseConfig(url=url, pool_min=1, pool_max=2))
    asked: dict[str, list[Asked]] = {}
    async with open_engine(config) as engine:
        for i, (way, batched) in enumerate(WAYS.items()):
            prefix = f"way{i}:"
            ids = await load(engine, data, batched, prefix)
            asked[way] = await gather(engine, data, ids, prefix)
    first = next(iter(asked.values()))
    main_modes, cal_modes = modes(learned_floor(first), extra)
    ways = {way: figures(a, main_modes, cal_modes) for way, a in asked.items()}
    return {"facts": sum(len(s["facts"]) for s in data["scopes"]), "questions": len(first),
            **ways[next(iter(ways))], "ways": ways, "same": all(w == ways[next(iter(ways))] for w in ways.values())}


def report(results: dict[str, Any]) -> str:
    """The tables printed (and copied into docs/explanation/ranking.md): each way of storing, then the modes."""
    out = [f"{results['facts']} memories, {results['questions']} questions\n",
           table("stored as (weighted hybrid)", [(w, f["modes"]["weighted hybrid (default)"])
                                                 for w, f in results["ways"].items()]),
           f"\nthe same figures both ways: {'yes' if results['same'] else 'NO'}\n",
           table("mode", list(results["modes"].items())), "",
           table("relevance calibration (weighted hybrid)", list(results["calibration"].items())), ""]
    names = list(next(iter(results["by_kind"].values())))
    out.append("| R@1 / R@5 by question kind | " + " | ".join(names) + " |")
    out.append("|---|" + "---:|" * len(names))
    out += [f"| {kind} | " + " | ".join(f"{v[n]['R@1']:.2f} / {v[n]['R@5']:.2f}" for n in names) + " |"
            for kind, v in results["by_kind"].items()]
    return "\n".join(out)


def main() -> None:
    """Parse options, run against an embedded or given PostgreSQL, print the tables."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", help="an empty database to load into (default: embedded, temporary)")
    parser.add_argument("--dataset", type=Path, default=DATASET)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--weights", nargs="*", default=[],
                        help="more weighted hybrids to score: recency,importance,relevance,keyword")
    args = parser.parse_args()
    data = json.loads(args.dataset.read_text(encoding="utf-8"))
    extra = [Weights(*(float(x) for x in w.split(","))) for w in args.weights]
    if args.database_url:
        results = asyncio.run(run(args.database_url, data, extra))
    else:
        with tempfile.TemporaryDirectory(prefix="npc-quality-") as tmp:
            pg = EmbeddedPostgres(Path(tmp))
            try:
                results = asyncio.run(run(pg.url, data, extra))
            finally:
                pg.stop()
    print(report(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
