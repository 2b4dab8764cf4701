"""What reading one line per request as dialogue costs a store: the defaults beside the rules off, in one run.

    python -m benchmarks.dialogue_write [--lines 600] [--vectors] [--database-url DSN] [--json out]

The conversation benchmark's sessions (benchmarks/conversation/dataset.json) are stored the way a game that
stores each line as it is said would: one ``engine.store`` per line, no tier, every line of a session at the
session's date. Each line is stored three times, once per write setting, each into its own scope (so each
setting sees its own history), the order rotated per line so machine noise hits all alike:

- ``facts``: dialogue reading off (``dialogue_batch_min`` 0): every line a fact under the duplicate rule;
- ``third round``: lone lines read as turns as the third round left it (``dialogue_same_voice``,
  ``dialogue_repeated_lines`` and ``dialogue_context_answer`` off);
- ``defaults``: today's defaults (a question stored alone re-embedded when its answer arrives, the same
  voice's next line, a repeated first line).

``--settle N`` stores the first N lines untimed and analyses the table before timing the rest: the plans a
database has once autovacuum has run, rather than those made while the table had no statistics (the default,
as earlier runs measured). ``--vectors`` gives every line its vector (the caller's), which leaves the store's
own reads and writes: the extra index probes of the dialogue rules without the model (a question's late
re-embedding needs the model, so it does not run then).
"""

from __future__ import annotations

import argparse
import json
import uuid
from dataclasses import replace
from datetime import datetime
from typing import Any

from npc_memory.domain.model import ContentType, NewMemory, Scope, Speaker, Subject
from npc_memory.engine import MemoryEngine
from npc_memory.server.runtime import open_engine

from benchmarks.conversation.generate import DATASET
from benchmarks.write import analyse, bench_config, percentiles, run_main, timed

MODES = ("facts", "third round", "defaults")


def line(turn: dict[str, Any], companion: str, at: datetime, vector: Any) -> NewMemory:
    """A session's line as the game stores it alone: the speaker's own, at the session's date, no tier."""
    user = turn["speaker"] == "user"
    return NewMemory(Speaker.USER if user else Speaker.HEROINE, Subject.USER if user else Subject.HEROINE,
                     "user" if user else companion, ContentType.FACT, turn["text"], valid_at=at, embedding=vector)


def engines(engine: MemoryEngine) -> dict[str, MemoryEngine]:
    """The engine under each write setting (same database, model and tokenizer)."""
    write = engine.write_settings
    third = replace(write, dialogue_same_voice=False, dialogue_repeated_lines=False, dialogue_context_answer=False)
    return {"facts": replace(engine, write_settings=replace(write, dialogue_batch_min=0)),
            "third round": replace(engine, write_settings=third), "defaults": engine}


async def run(engine: MemoryEngine, n_lines: int, vectors: bool, settle: int = 0) -> dict[str, Any]:
    """Store up to ``n_lines`` lines under every mode, interleaved; the per-store milliseconds of each.

    With ``settle``, the first ``settle`` lines are stored untimed and the table analysed before the rest.
    """
    data = json.loads(DATASET.read_text(encoding="utf-8"))
    by_mode = engines(engine)
    samples: dict[str, list[float]] = {m: [] for m in MODES}
    run_id, done = uuid.uuid4().hex[:8], 0
    for conv in data["conversations"]:
        scopes = {m: Scope(f"dw-{run_id}-{i}-{conv['user_id']}", conv["companion_id"]) for i, m in enumerate(MODES)}
        for session in conv["sessions"]:
            at = datetime.fromisoformat(session["date"])
            turns = session["turns"]
            given = await engine.embedder.embed_passages([t["text"] for t in turns]) if vectors else [None] * len(turns)
            for turn, vector in zip(turns, given, strict=True):
                fact = line(turn, conv["companion_id"], at, vector)
                order = MODES[done % 3:] + MODES[:done % 3]
                for mode in order:
                    ms = await timed(lambda e=by_mode[mode], s=scopes[mode], f=fact: e.store(s, [f]))  # type: ignore[misc]
                    if done >= settle:
                        samples[mode].append(ms)
                done += 1
                if done == settle:
                    await analyse(engine)
                if done >= n_lines + settle:
                    return summarise(samples, vectors)
    return summarise(samples, vectors)


def summarise(samples: dict[str, list[float]], vectors: bool) -> dict[str, Any]:
    """Percentiles per mode and each mode's p50 and mean beside the facts-only store's."""
    out: dict[str, Any] = {"vectors": vectors, "modes": {m: percentiles(ms) for m, ms in samples.items()}}
    base = out["modes"]["facts"]
    for m in MODES:
        row = out["modes"][m]
        row["p50_minus_facts_ms"] = row["p50"] - base["p50"]
        row["mean_minus_facts_ms"] = row["mean"] - base["mean"]
    return out


def show(s: dict[str, Any]) -> None:
    """Print the table."""
    given = "caller vectors (the store's own reads and writes)" if s["vectors"] else "the service embeds each line"
    print(f"one line per request, {given}; {s['modes']['facts']['n']} lines per mode, interleaved\n")
    print(f"{'write setting':<14}{'p50 ms':>9}{'p95 ms':>9}{'mean ms':>9}{'p50 - facts':>13}{'mean - facts':>14}")
    for m in MODES:
        r = s["modes"][m]
        print(f"{m:<14}{r['p50']:>9.2f}{r['p95']:>9.2f}{r['mean']:>9.2f}"
              f"{r['p50_minus_facts_ms']:>+13.2f}{r['mean_minus_facts_ms']:>+14.2f}")


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    """Start the database (embedded in a fresh directory unless a URL is given) and the engine, run."""
    async with open_engine(bench_config(args)) as engine:
        await engine.store(Scope("bench-warmup", "letia"), [line({"speaker": "user", "text": "준비 운동"}, "letia",
                                                                  datetime.fromisoformat("2025-01-01T00:00:00+00:00"),
                                                                  None)])
        return await run(engine, args.lines, args.vectors, args.settle)


def main() -> None:
    """Parse options, run, print, optionally write JSON."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--lines", type=int, default=600, help="lines stored per write setting")
    parser.add_argument("--vectors", action="store_true", help="give every line its vector (no model in the store)")
    parser.add_argument("--settle", type=int, default=0,
                        help="lines stored untimed first, then the table analysed (plans made with statistics)")
    run_main(parser, main_async, show)


if __name__ == "__main__":
    main()
