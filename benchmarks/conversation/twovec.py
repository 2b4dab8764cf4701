"""Two vectors per turn, emulated: the turn with its context (as stored now) and the turn alone, fused at read time.

    python -m benchmarks.conversation.twovec [--json out.json]

Context vectors (a turn embedded with the turn before it, a question with its answer) found replies that mean
nothing alone, but a line that states something itself is embedded under an unrelated neighbour too. Here each
conversation is stored twice: as the defaults store it (``heldout-label``: the service makes context vectors)
and with every turn's own vector (write mode ``source``). Every question is asked of both with the defaults
(``limit`` 30 each), and the two rankings are fused per turn: the better final score of the two (what one
statement with a second vector column and the greater cosine would rank, up to the min-max calibration, which
each search does over its own candidates), their sum, and reciprocal rank. Nothing here changes the service.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from npc_memory.config import Config, DatabaseConfig
from npc_memory.domain.model import Fusion, ScoredMemory, SearchQuery, Weights
from npc_memory.engine import MemoryEngine
from npc_memory.server.runtime import open_engine

from benchmarks.conversation import metrics
from benchmarks.conversation.metrics import Answer
from benchmarks.conversation.readtime import stored_as_defaults
from benchmarks.conversation.run import Loaded, experiment_main, load

WIDE = 30
Fuse = Callable[[Sequence[tuple[str, float]], Sequence[tuple[str, float]]], list[str]]


def by_best(a: Sequence[tuple[str, float]], b: Sequence[tuple[str, float]]) -> list[str]:
    """Turns ranked by the better of their two final scores."""
    score: dict[str, float] = {}
    for turn, s in (*a, *b):
        score[turn] = max(score.get(turn, 0.0), s)
    return sorted(score, key=lambda t: -score[t])


def by_sum(a: Sequence[tuple[str, float]], b: Sequence[tuple[str, float]]) -> list[str]:
    """Turns ranked by the sum of their two final scores (0 where a list lacks the turn)."""
    score: dict[str, float] = {}
    for turn, s in (*a, *b):
        score[turn] = score.get(turn, 0.0) + s
    return sorted(score, key=lambda t: -score[t])


def by_rank(a: Sequence[tuple[str, float]], b: Sequence[tuple[str, float]]) -> list[str]:
    """Turns ranked by reciprocal rank over the two lists (k 60)."""
    score: dict[str, float] = {}
    for ranked in (a, b):
        for r, (turn, _) in enumerate(ranked):
            score[turn] = score.get(turn, 0.0) + 1.0 / (60 + r)
    return sorted(score, key=lambda t: -score[t])


FUSIONS: dict[str, Fuse] = {
    "context vectors (defaults)": lambda a, _b: [t for t, _ in a],
    "own vectors": lambda _a, b: [t for t, _ in b],
    "better final of the two": by_best,
    "sum of the two finals": by_sum,
    "reciprocal rank of the two": by_rank,
}


async def asked(engine: MemoryEngine, conv: dict[str, Any], lo: Loaded, turn_of: dict[UUID, str], text: str,
                vector: Any) -> list[tuple[str, float]]:
    """The first ``WIDE`` hits of one scope for a question, as (turn id, final score)."""
    now = datetime.fromisoformat(conv["now"])
    hits: list[ScoredMemory] = await engine.search(SearchQuery(
        scope=lo.scope, text=text, limit=WIDE, weights=Weights(), now=now, fusion=Fusion.WEIGHTED,
        embedding=vector, recency_days=engine.search_settings.recency_days_for(lo.scope.heroine_id)))
    return [(turn_of[h.memory.id], h.scores.final) for h in hits]


async def run(url: str, data: dict[str, Any]) -> dict[str, Any]:
    """Store both ways, ask every question of both, fuse."""
    answers: dict[str, list[Answer]] = {name: [] for name in FUSIONS}
    async with open_engine(Config(database=DatabaseConfig(url=url, pool_min=1, pool_max=2))) as engine:
        ask, loaded = await stored_as_defaults(engine, data, "twovec:")
        own = [await load(engine, conv, await _own(engine, conv), "twovec-own:", "source") for conv, _ in loaded]
        for (conv, ctx), alone in zip(loaded, own, strict=True):
            turn_of = {m: t for lo in (ctx, alone) for t, m in lo.memory_of.items()}
            qvecs = await engine.embedder.embed_queries([q["text"] for q in conv["questions"]])
            for q, vec in zip(conv["questions"], qvecs, strict=True):
                a = await asked(ask, conv, ctx, turn_of, q["text"], vec)
                b = await asked(ask, conv, alone, turn_of, q["text"], vec)
                evidence: list[UUID | None] = [ctx.memory_of[t] if t not in ctx.dropped else None
                                               for t in q["evidence"]]
                for name, fuse in FUSIONS.items():
                    ranked = [ctx.memory_of[t] for t in fuse(a, b)][:15]
                    answers[name].append(Answer(q["kind"], q["shape"], conv["language"], ranked, evidence))
    return {"figures": {name: metrics.figures(got) for name, got in answers.items()}}


async def _own(engine: MemoryEngine, conv: dict[str, Any]) -> dict[str, Any]:
    """Each turn's own passage vector."""
    turns = [t for s in conv["sessions"] for t in s["turns"]]
    return dict(zip([t["id"] for t in turns], await engine.embedder.embed_passages([t["text"] for t in turns]),
                    strict=True))


def report(results: dict[str, Any]) -> str:
    """R@5 / R@10 overall and R@10 by kind, per fusion."""
    return metrics.kind_table(results["figures"], "fusion")


def main() -> None:
    """Run against a temporary embedded PostgreSQL and print the table."""
    experiment_main(__doc__ or "", "npc-twovec-", run, report)


if __name__ == "__main__":
    main()
