"""One command for every benchmark: ``python -m benchmarks SUITE``, and ``python -m benchmarks report``.

    python -m benchmarks list
    python -m benchmarks SUITE [--against REV [--this-harness]] [--rounds N] [--out DIR]
                               [-- options of the suite's command]
    python -m benchmarks report [--check]

A suite runs one or more benchmark commands (``SUITES``) and writes ``docs/results/SUITE.json``: the figures, the
revision and the machine they were measured on. ``--against REV`` runs the same suite on another checkout
too (a temporary ``git worktree`` of REV, its own ``service/`` and generated client first on ``PYTHONPATH``,
its own benchmark code when it has the suite's modules, unless ``--this-harness``): with ``--rounds N`` the two
alternate N times, so slow drift of a shared machine falls on both. ``report`` rebuilds docs/benchmarks.md and
the README's figures table from the results files.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks import report

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "docs" / "results"


@dataclass(frozen=True)
class Command:
    """One benchmark command of a suite: ``python -m module *args --json FILE`` (or ``--out DIR``)."""

    module: str
    args: tuple[str, ...] = ()
    output: str = "--json"
    """How the command is told where to write: ``--json FILE``, or ``--out DIR`` (it writes DIR/results.json)."""
    data_dir: bool = False
    """It keeps a database in ``--data-dir``: another checkout gets a directory of its own."""


@dataclass(frozen=True)
class Suite:
    """A named set of commands whose figures land in one results file."""

    title: str
    commands: dict[str, Command]


SUITES: dict[str, Suite] = {
    "quality": Suite("Korean retrieval quality (recall@k, MRR by ranking mode)",
                     {"quality": Command("benchmarks.quality.run")}),
    "conversation": Suite("Conversation recall (dated conversations over a long relationship, Korean and English)",
                          {"conversation": Command("benchmarks.conversation.run", ("--steps", "dialogue", "facts")),
                           "topical": Command("benchmarks.conversation.run", ("--topical", "--steps", "dialogue"))}),
    "search": Suite("Search speed: gRPC latency beside the embedder alone and the bare SQL; throughput",
                    {"search": Command("benchmarks.search_speed", ("--rows", "10000"), data_dir=True)}),
    "write": Suite("Writes: single and batch stores beside the embedder alone",
                   {"write": Command("benchmarks.write")}),
    "load": Suite("Load: Locust at a fixed concurrency by table size, beside the bare SQL",
                  {"load": Command("loadtest.bench", ("--scales", "10000,100000"), output="--out")}),
    "resilience": Suite("Resilience: kill -9 under writes, a database outage, a big write beside health checks",
                        {"crash": Command("benchmarks.crash", ("--rounds", "2")),
                         "db_outage": Command("benchmarks.db_outage", ("--rounds", "2")),
                         "stall": Command("benchmarks.stall", ("--batches", "2"))}),
    "scale": Suite("Scale: a search and a store on one PostgreSQL beside a Citus coordinator (scripts/citus up)",
                   {"scale": Command("benchmarks.scale")}),
}


def machine() -> dict[str, Any]:
    """What the figures were measured on: CPU model and count, memory, OS, Python, load when the run started."""
    model = ""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        model = next((line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines()
                      if line.startswith("model name")), "")
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30 if hasattr(os, "sysconf") else 0.0
    return {"cpu": model or platform.processor() or platform.machine(), "cpus": os.cpu_count(),
            "memory_gib": round(memory, 1), "platform": platform.platform(), "python": platform.python_version(),
            "load_average": [round(x, 2) for x in os.getloadavg()]}


def revision(root: Path) -> str:
    """The commit checked out at ``root``, with ``+changes`` when the tree (results files aside) differs from it."""
    head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=root, capture_output=True, text=True,
                          check=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!docs/results"],
                           cwd=root, capture_output=True, text=True, check=True).stdout.strip()
    return head + ("+changes" if dirty else "")


@dataclass(frozen=True)
class Checkout:
    """A tree whose service is measured: this one, or another revision's worktree."""

    root: Path
    harness: Path
    """The tree whose benchmark code runs (the other checkout's own when it has the suite's modules)."""
    label: str

    def run(self, command: Command, extra: Sequence[str], scratch: Path) -> dict[str, Any]:
        """Run ``command`` with this checkout's service importable first; the figures it wrote."""
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(self.root / "service"), str(self.root / "clients" / "python"),
                                             str(self.harness),
                                             *filter(None, [os.environ.get("PYTHONPATH")])])
        argv = [sys.executable, "-m", command.module, *command.args, *extra]
        if command.data_dir and self.label != "this":
            argv += ["--data-dir", str(scratch / "data")]
        target = scratch / ("out" if command.output == "--out" else "figures.json")
        argv += [command.output, str(target)]
        print(f"[{self.label}] {' '.join(argv[1:])}", file=sys.stderr, flush=True)
        subprocess.run(argv, cwd=self.harness, env=env, check=True)
        written = target / "results.json" if command.output == "--out" else target
        figures: dict[str, Any] = json.loads(written.read_text(encoding="utf-8"))
        return figures


def other_checkout(rev: str, suite: Suite, where: Path, own_harness: bool = True) -> Checkout:
    """A detached worktree of ``rev`` under ``where``: its service, and its own benchmarks when it has them.

    ``own_harness`` False: this tree's benchmark code measures it too (an option the older code lacks).
    """
    subprocess.run(["git", "worktree", "add", "--detach", str(where), rev], cwd=ROOT, check=True,
                   capture_output=True)
    has_modules = all((where / (c.module.replace(".", "/") + ".py")).exists() for c in suite.commands.values())
    return Checkout(where, where if has_modules and own_harness else ROOT, rev)


def run_suite(name: str, against: str | None, rounds: int, out: Path, extra: Sequence[str],
              own_harness: bool = True) -> Path:
    """Run suite ``name`` (and on ``against`` too), write ``out/<name>.json``; its path."""
    suite = SUITES[name]
    started = datetime.now(UTC)
    checkouts = [Checkout(ROOT, ROOT, "this")]
    scratch = Path(tempfile.mkdtemp(prefix=f"npc-bench-{name}-"))
    try:
        if against:
            checkouts.append(other_checkout(against, suite, scratch / "checkout", own_harness))
        runs: list[dict[str, Any]] = []
        for round_ in range(rounds):
            for checkout in checkouts:
                figures = {}
                for key, command in suite.commands.items():
                    work = scratch / f"{checkout.label.replace('/', '_')}-{round_}-{key}"
                    work.mkdir(parents=True)
                    figures[key] = checkout.run(command, extra, work)
                runs.append({"checkout": checkout.label, "revision": revision(checkout.root), "round": round_ + 1,
                             "figures": figures})
    finally:
        if against:
            subprocess.run(["git", "worktree", "remove", "--force", str(scratch / "checkout")], cwd=ROOT,
                           capture_output=True, check=False)
        shutil.rmtree(scratch, ignore_errors=True)
    this = runs[0]
    argv = [name, *(["--against", against] if against else []), *([] if own_harness else ["--this-harness"]),
            *(["--rounds", str(rounds)] if rounds > 1 else []),
            *(["--", *extra] if extra else [])]
    result = {"suite": name, "title": suite.title, "command": " ".join(["python -m benchmarks", *argv]),
              "revision": this["revision"], "started": started.isoformat(timespec="seconds"),
              "machine": machine(), "figures": this["figures"], "runs": runs if len(runs) > 1 else []}
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.json"
    path.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {path}", file=sys.stderr)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the command line: a suite's name, ``list`` or ``report``."""
    args = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in args:
        cut = args.index("--")
        args, extra = args[:cut], args[cut + 1:]
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("suite", choices=[*SUITES, "list", "report"])
    parser.add_argument("--against", metavar="REV", help="also measure this git revision, in the same run")
    parser.add_argument("--rounds", type=int, default=1, help="with --against: alternate the two this many times")
    parser.add_argument("--this-harness", action="store_true",
                        help="with --against: measure REV with this tree's benchmark code, not its own")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where SUITE.json goes (default docs/results)")
    parser.add_argument("--check", action="store_true", help="report: fail when a generated file is stale")
    opts = parser.parse_args(args)
    if opts.suite == "list":
        for name, suite in SUITES.items():
            print(f"{name:14} {suite.title}")
        return 0
    if opts.suite == "report":
        return report.main(opts.out, check=opts.check)
    run_suite(opts.suite, opts.against, max(1, opts.rounds), opts.out, extra, not opts.this_harness)
    return 0


if __name__ == "__main__":
    sys.exit(main())
