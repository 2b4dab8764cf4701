"""benchmarks/search_speed_targets.py: which part of the request path a py-spy stack is counted in."""

from __future__ import annotations

from pathlib import Path

from benchmarks.search_speed_targets import REST, grouped

LOOP = "<module> (npc_memory/cli.py:245);main (npc_memory/cli.py:228);run (npc_memory/ops/loop.py:30)"


def test_stacks_go_to_their_innermost_known_part(tmp_path: Path) -> None:
    raw = tmp_path / "raw.txt"
    raw.write_text("\n".join([
        # The loop's own work (uvloop's C code shows as its Python caller): not the interceptor's, as once counted.
        f"{LOOP};Runner.run (asyncio/runners.py:118) 7",
        f"{LOOP};guarded (npc_memory/api/interceptor.py:98);rank (npc_memory/search/rank.py:102) 5",
        f"{LOOP};guarded (npc_memory/api/interceptor.py:98);observe (npc_memory/ops/metrics.py:201) 3",
        f"{LOOP};guarded (npc_memory/api/interceptor.py:98);execute (psycopg/cursor_async.py:113) 2",
        "Thread._bootstrap (threading.py:1002);Thread.run (threading.py:982) 4",
    ]) + "\n")
    total, counts = grouped(raw)
    assert total == 21
    assert counts == {
        "event loop's own work (uvloop's C code, gRPC's callbacks on the loop)": 7,
        "held scopes and the scoring function": 5,
        "interceptor: decode, auth, metrics, logs": 3,
        "psycopg: send, wait, fetch, row making": 2,
        REST: 4,
    }
