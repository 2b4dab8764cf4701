"""The README's quick start from a fresh clone, timed: to the first answer, and a second ``scripts/serve`` to an answer.

    python -m benchmarks.quickstart [--source /work/main] [--runs 2] [--json docs/results/quickstart.json]

Each run clones ``--source`` into a new temporary directory (no ``.venv``, a fresh ``$XDG_DATA_HOME``, so the
embedded PostgreSQL is created too) and follows the README: ``scripts/serve`` until it says it serves, then the
first answer (a store and a search with the Python client the set-up installed); ``scripts/setup --tools`` and
the README's grpcurl search; then ``scripts/serve`` stopped (SIGTERM) and started again until a search answers.
pip's wheel cache is whatever the machine has (say so with the figures: a warm cache is not a first download).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.__main__ import machine, revision
from benchmarks.search_speed_parts import free_port

ASK = """
import sys
from npc_memory_client import Client
with Client(sys.argv[1], timeout=120) as m:
    if sys.argv[2] == "store":
        m.store("player-1", "letia", ["고양이를 좋아함"])
    hits = m.search("player-1", "letia", "내가 좋아하는 동물 기억나?", limit=2)
    assert hits[0].memory.content == "고양이를 좋아함", hits
"""
SEARCH = ('{"scope": {"user_id": "player-1", "heroine_id": "letia"}, "query": "내가 좋아하는 동물 기억나?", '
          '"limit": 2}')
READY = "npc-memory serving on port"


def _serve(clone: Path, port: int, env: dict[str, str], log: Path) -> tuple[subprocess.Popen[bytes], float]:
    """``scripts/serve --port PORT`` until its ready line; the process and the seconds it took."""
    began = time.monotonic()
    with log.open("wb") as out:
        proc = subprocess.Popen(["scripts/serve", "--port", str(port)], cwd=clone, env=env, stdout=out,
                                stderr=subprocess.STDOUT)
    while READY not in log.read_text(encoding="utf-8", errors="replace"):
        if proc.poll() is not None:
            raise RuntimeError(f"scripts/serve exited {proc.returncode}; see {log}")
        time.sleep(0.1)
    return proc, time.monotonic() - began


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)


def _run(cmd: list[str], clone: Path, env: dict[str, str]) -> float:
    began = time.monotonic()
    subprocess.run(cmd, cwd=clone, env=env, check=True, capture_output=True, timeout=600)
    return time.monotonic() - began


def one_run(source: str, work: Path) -> dict[str, Any]:
    """One fresh clone through the quick start; seconds of each step."""
    clone, port = work / "clone", free_port()
    env = {**os.environ, "XDG_DATA_HOME": str(work / "data")}
    # As a new user's shell: no virtualenv of ours active (scripts/setup makes .venv with the first python3 found).
    venv = env.pop("VIRTUAL_ENV", None)
    if venv:
        env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if not p.startswith(venv))
    (work / "ask.py").write_text(ASK, encoding="utf-8")
    began = time.monotonic()
    subprocess.run(["git", "clone", "-q", source, str(clone)], check=True, timeout=120)
    cloned = time.monotonic() - began
    proc, _ = _serve(clone, port, env, work / "serve-1.log")
    ready = time.monotonic() - began
    python = str(clone / ".venv" / "bin" / "python")
    try:
        _run([python, str(work / "ask.py"), f"127.0.0.1:{port}", "store"], clone, env)
        answered = time.monotonic() - began
        grpcurl = clone / ".venv" / "bin" / "grpcurl"
        found = grpcurl.exists()  # what `. .venv/bin/activate` would put on the path before the tools step
        tools = _run(["scripts/setup", "--tools"], clone, env)
        _run([str(grpcurl), "-plaintext", "-d", SEARCH, f"localhost:{port}",
              "npc_memory.v1.MemoryService/SearchMemories"], clone, env)
        grpcurl_answered = time.monotonic() - began
    finally:
        _stop(proc)
    second_began = time.monotonic()
    proc, second_ready = _serve(clone, port, env, work / "serve-2.log")
    try:
        _run([python, str(work / "ask.py"), f"127.0.0.1:{port}", "search"], clone, env)
        second_answered = time.monotonic() - second_began
    finally:
        _stop(proc)
    return {"clone_s": cloned, "first_serve_ready_s": ready, "first_answer_s": answered,
            "grpcurl_after_serve_alone": found, "tools_step_s": tools, "grpcurl_answer_s": grpcurl_answered,
            "second_serve_ready_s": second_ready, "second_serve_answer_s": second_answered}


def main() -> None:
    """Parse flags, run, print, and write the figures."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", default=str(Path(__file__).resolve().parent.parent))
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--pip-cache", default="as found", help="what to say of pip's wheel cache (warm, cold)")
    args = parser.parse_args()
    started, on = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()), machine()
    measured = revision(Path(args.source))
    runs = []
    for n in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="npc-quickstart-") as tmp:
            runs.append(one_run(args.source, Path(tmp)))
        print(f"run {n + 1}: " + ", ".join(f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}"
                                           for k, v in runs[-1].items()), flush=True)
    figures = {k: statistics.median(r[k] for r in runs) for k in runs[0] if isinstance(runs[0][k], float)}
    figures["grpcurl_after_serve_alone"] = any(r["grpcurl_after_serve_alone"] for r in runs)
    found = {"suite": "quickstart", "title": "The README's quick start from a fresh clone (median of the runs)",
             "command": "python -m benchmarks.quickstart " + " ".join(sys.argv[1:]), "revision": measured,
             "started": started, "machine": on, "pip_cache": args.pip_cache, "figures": figures, "runs": runs}
    print(json.dumps(figures, indent=1))
    if args.json:
        args.json.write_text(json.dumps(found, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
