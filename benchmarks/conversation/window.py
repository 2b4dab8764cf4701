"""How much of the conversation a turn's vector should see, emulated: windows of turns around it.

    python -m benchmarks.conversation.window [--json out.json]

The service embeds a dialogue turn with the turn before it (and a question with its answer), each line written
with its speaker (domain/dialogue.py ``embedding_texts``, ``speaker_label`` ``name``). Here each turn's text is
made with other windows of its session, embedded by the bundled model, and stored with that vector given (tier
source, every turn kept); every question is asked with the defaults. The first row rebuilds the service's text
(one turn before, the answer after a question), so the rows compare on the same footing. Nothing here changes the
service.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from npc_memory.config import Config, DatabaseConfig
from npc_memory.domain.dialogue import asks, speaker_label
from npc_memory.domain.model import Fusion, SearchQuery, Speaker, Weights
from npc_memory.engine import MemoryEngine
from npc_memory.server.runtime import open_engine

from benchmarks.conversation import metrics
from benchmarks.conversation.metrics import Answer
from benchmarks.conversation.readtime import stored_as_defaults
from benchmarks.conversation.run import Loaded, experiment_main, load
from benchmarks.quality.run import Mode


@dataclass(frozen=True)
class Window:
    """Turns of the session a turn's text takes: ``before`` earlier ones; the next one always or after a question."""

    name: str
    before: int
    after_always: bool = False
    after_question: bool = True
    as_query: bool = False
    """Embedded with e5's ``query:`` prefix, as the questions are (the symmetric use), not ``passage:``."""


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


DEFAULTS = MODES[0]
"""The default weighted ranking (every question asked with it, its first 15 hits)."""

WINDOWS = (
    Window("1 before, answer after a question (the service's text)", 1),
    Window("2 before, answer after a question", 2),
    Window("3 before, answer after a question", 3),
    Window("1 before, 1 after", 1, after_always=True),
    Window("2 before, 1 after", 2, after_always=True),
    Window("the line alone, labelled, answer after a question", 0),
    Window("1 before, answer after a question, as a query", 1, as_query=True),
)


def texts(conv: dict[str, Any], window: Window) -> dict[str, str]:
    """Each turn's embedded text under ``window``, lines labelled by speaker as the service labels them."""
    out = {}
    for session in conv["sessions"]:
        turns = session["turns"]
        said = [speaker_label(Speaker.USER if t["speaker"] == "user" else Speaker.HEROINE, t["text"], "name",
                              conv["companion_id"]) for t in turns]
        for i, t in enumerate(turns):
            lines = said[max(0, i - window.before):i + 1]
            if i + 1 < len(turns) and (window.after_always or (window.after_question and asks(t["text"]))):
                lines.append(said[i + 1])
            out[t["id"]] = "\n".join(lines)
    return out


async def run(url: str, data: dict[str, Any]) -> dict[str, Any]:
    """Store each window's vectors, ask every question; the service's own storing as the first row."""
    got: dict[str, list[Answer]] = {}
    async with open_engine(Config(database=DatabaseConfig(url=url, pool_min=1, pool_max=2))) as engine:
        asker, stored = await stored_as_defaults(engine, data, "window-service:")
        questions = [q for c in data["conversations"] for q in c["questions"]]
        qvecs = dict(zip([q["id"] for q in questions],
                         await engine.embedder.embed_queries([q["text"] for q in questions]), strict=True))
        got["as stored by the service"] = await ask_conversations(asker, stored, qvecs, DEFAULTS)
        for n, window in enumerate(WINDOWS):
            got[window.name] = []
            for conv in data["conversations"]:
                made = texts(conv, window)
                embed = engine.embedder.embed_queries if window.as_query else engine.embedder.embed_passages
                vectors = dict(zip(made, await embed(list(made.values())), strict=True))
                lo = await load(engine, conv, vectors, f"window{n}:", "source")
                got[window.name] += await ask_conversations(asker, [(conv, lo)], qvecs, DEFAULTS)
    return {"figures": {name: metrics.figures(a) for name, a in got.items()}}


def report(results: dict[str, Any]) -> str:
    """R@5 / R@10 overall and R@10 by kind and language, per window."""
    return metrics.kind_table(results["figures"], "turn's text")


def main() -> None:
    """Run against a temporary embedded PostgreSQL and print the table."""
    experiment_main(__doc__ or "", "npc-window-", run, report)


if __name__ == "__main__":
    main()
