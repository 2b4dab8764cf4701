"""py-spy samples of a serving process, grouped by the part of the request path each stack is in.

Used by benchmarks.profile_search, benchmarks.profile_store and benchmarks.search_speed (where a saturated
server's CPU per search goes). py-spy is pinned in the dev dependencies.
"""

from __future__ import annotations

import collections
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")
Groups = tuple[tuple[str, tuple[str, ...]], ...]

# The first group any frame of a stack (innermost first) belongs to; the last takes what is left.
GROUPS: Groups = (
    ("psycopg: statement placeholders parsed", ("_query2pg", "_split_query", "PostgresQuery.convert", "as_bytes")),
    ("psycopg: send, wait, fetch, row making", ("psycopg/", "psycopg_pool/")),
    ("model (embedding)", ("embedding/",)),
    ("tokenising the query", ("text/", "kiwipiepy")),
    ("response building (api/convert.py)", ("api/convert.py",)),
    ("request parsing and validation", ("api/requests.py", "api/validation.py")),
    ("rows to domain values", ("store/search.py", "memory_from_row")),
    # Not "ops/": the event loop's own frame is ops/loop.py, under every sample of the loop's thread.
    ("interceptor: decode, auth, metrics, logs",
     ("interceptor.py", "deserialize.py", "ops/metrics.py", "ops/logs.py", "ops/keys.py")),
    ("held scopes and the scoring function",
     ("domain/scoring.py", "scope_rank.py", "scope_kept.py", "scope_rows.py", "scope_cache.py")),
    ("engine and statement choice", ("engine/memory.py", "search_sql.py", "store/search.py")),
    ("event loop's own work (uvloop's C code, gRPC's callbacks on the loop)", ("ops/loop.py",)),
)
REST = "other threads (gRPC's poller thread, executors)"
LOOP_THREAD = "ops/loop.py"
"""A frame under every sample of the server's event-loop thread (``npc-memory serve`` runs its loop there)."""


def grouped(raw: Path, groups: Groups = GROUPS, rest: str = REST, within: str | None = None,
            ) -> tuple[int, dict[str, int]]:
    """Samples in all, and per group, of a py-spy ``--format raw`` file (only stacks holding ``within``, if given)."""
    counts: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if within is not None and within not in stack:
            continue
        total += int(n)
        name = rest
        for frame in reversed(stack.split(";")):
            found = next((g for g, keys in groups if any(k in frame for k in keys)), None)
            if found:
                name = found
                break
        counts[name] += int(n)
    return total, dict(counts)


def share_table(path: str, total: int, counts: dict[str, int], groups: Groups = GROUPS, rest: str = REST) -> str:
    """The Markdown table of each group's share of the samples."""
    names = [g for g, _ in groups] + [rest]
    rows = [f"| {name} | {100 * counts.get(name, 0) / max(total, 1):.1f}% |" for name in names]
    return "\n".join([f"| part of the {path} | share of samples |", "|---|---:|", *rows])


def py_spy() -> str:
    """The py-spy program: on the PATH, or beside this Python (a virtualenv's, run without activating it)."""
    found = shutil.which("py-spy") or shutil.which("py-spy", path=str(Path(sys.executable).parent))
    if found is None:
        raise FileNotFoundError("py-spy is not installed (scripts/setup --dev installs it)")
    return found


def sampled(pid: int, seconds: float, raw: Path, run: Callable[[], T]) -> T:
    """``run()``'s answer, while py-spy samples process ``pid`` for ``seconds`` into ``raw`` (its raw format)."""
    spy = subprocess.Popen([py_spy(), "record", "--pid", str(pid), "--duration", str(max(1, int(seconds))),
                            "--rate", "200", "--format", "raw", "--output", str(raw), "--nonblocking"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1)  # py-spy attaches
    try:
        return run()
    finally:
        if spy.wait() != 0:
            raise RuntimeError(f"py-spy exited with {spy.returncode} (it needs ptrace rights over pid {pid})")
