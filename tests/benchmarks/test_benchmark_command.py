"""``python -m benchmarks``: one command runs a suite into a results file; ``report`` rebuilds the docs from them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import report
from benchmarks.__main__ import SUITES

ROOT = Path(__file__).resolve().parents[2]


def test_the_suites_are_the_jobs_people_measure() -> None:
    """``list`` names the suites: Korean quality, conversation recall, search speed, writes, load, resilience, scale."""
    out = subprocess.run([sys.executable, "-m", "benchmarks", "list"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    assert [line.split()[0] for line in out.splitlines()] == [
        "quality", "conversation", "search", "write", "load", "resilience", "scale"]
    assert list(SUITES) == list(report.ORDER)


def test_the_generated_figures_are_fresh() -> None:
    """docs/benchmarks.md and the README's figures table are what ``report`` makes of docs/results/*.json."""
    done = subprocess.run([sys.executable, "-m", "benchmarks", "report", "--check"], cwd=ROOT, capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_a_missing_figure_reports_as_a_dash() -> None:
    """A results file without some figure still reports, with "-" where the figure would be."""
    head, detail = report.write({"write": {"store_single": {"p50": 12.5}}})
    assert head[0][1] == "12.5 ms"
    assert head[0][2] == "embedder alone -"
    assert any("store_single" in line for line in detail)


@pytest.mark.slow
def test_a_suite_runs_here_and_against_another_revision(tmp_path: Path) -> None:
    """``write --against HEAD`` measures both checkouts in one run and records the machine and both revisions."""
    subprocess.run([sys.executable, "-m", "benchmarks", "write", "--against", "HEAD", "--out", str(tmp_path), "--",
                    "--facts", "2", "--batches", "1", "--scope-rows", "2"], cwd=ROOT, check=True, timeout=280,
                   capture_output=True)
    result = json.loads((tmp_path / "write.json").read_text(encoding="utf-8"))
    assert result["suite"] == "write"
    assert result["machine"]["cpus"] >= 1
    assert [run["checkout"] for run in result["runs"]] == ["this", "HEAD"]
    for run in result["runs"]:
        assert run["figures"]["write"]["store_single"]["n"] == 2
    assert result["figures"]["write"]["store_single"]["p50"] > 0
    head, _ = report.write(result["figures"])
    assert head[0][1].endswith(" ms")
