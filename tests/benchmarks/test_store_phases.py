"""``python -m benchmarks.store_phases`` still times every step of a lone text store (it wraps the engine by name).

Run as the command is run, in a process of its own (the timers replace module attributes for the whole process).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

STEPS = [
    "Kiwi starts", "Kiwi done", "the write transaction is called", "a connection is had",
    "a sync: statements queued", "a sync: pipeline_sync (the send)", "a sync: flushed", "the model is called",
    "the model answered", "the block queued its writes", "a sync: statements queued",
    "a sync: pipeline_sync (the send)", "a sync: flushed", "the last answers are awaited",
    "the last answers are in (writes, COMMIT)", "committed", "the store returned",
]


def test_every_step_of_a_lone_store_is_timed(tmp_path: Path) -> None:
    """Each store passes every step (the two syncs' twice), each timed once per pass.

    In the order listed when the model's call may take every core (the reads go beside it); with the other core
    busy (a loaded machine) a store embeds first, so the order is not asserted, only that every step was timed.
    """
    out = tmp_path / "phases.json"
    subprocess.run([sys.executable, "-m", "benchmarks.store_phases", "--stores", "4", "--pause", "0.05",
                    "--json", str(out)], cwd=REPO, check=True, capture_output=True, timeout=300)
    summary = json.loads(out.read_text(encoding="utf-8"))
    passes: dict[str, int] = {}
    for row in summary["steps"]:
        passes[row["step"]] = passes.get(row["step"], 0) + row["n"]
        assert row["p50"] >= 0.0
    assert passes == {step: 4 * STEPS.count(step) for step in STEPS}
    assert summary["embedder_alone_p50"] > 0.0
    model = [row["p50"] for row in summary["steps"] if row["step"] == "the model answered"]
    assert summary["store_p50"] > max(model)
