"""The database stops under search and store load and starts again (one round of ``benchmarks.db_outage``)."""

from __future__ import annotations

from pathlib import Path

import grpc

from benchmarks.db_outage import run_outages


async def test_calls_turn_unavailable_quickly_and_recover_after_a_database_restart(tmp_path: Path) -> None:
    """UNAVAILABLE only (never INTERNAL/UNKNOWN), fast once health is NOT_SERVING; recovery; nothing acked lost."""
    # A 2 s connect timeout (5 s by default) lets the calls caught waiting at the stop fail inside the 4 s outage,
    # so calls also start while health reads NOT_SERVING: those must fail fast, not wait the 2 s.
    (r,) = await run_outages(tmp_path, rounds=1, outage_seconds=4.0, writers=3, searchers=3, settle_seconds=1.0,
                             server_env={"NPC_MEMORY_CONNECT_TIMEOUT": "2"})
    print(f"failed {r.codes()}, flip {r.health_flip}, stop {r.stop_seconds:.2f} s, first store {r.first_store}, "
          f"first search {r.first_search}, serving {r.serving_again}, acked {r.acked}")
    assert r.failed, "the outage failed no call: the load did not reach the database"
    assert {c.code for c in r.failed} == {grpc.StatusCode.UNAVAILABLE}
    assert r.health_flip is not None
    assert r.health_flip <= r.stop_seconds + 2.0  # within 2 s of the database being gone
    flipped_at = r.down_at - r.stop_seconds + r.health_flip
    later = [c.ended - c.started for c in r.failed if c.started > flipped_at + 0.1]
    assert later, "no call was made while the service reported NOT_SERVING"
    assert max(later) < 1.0  # before: each waited the pool's whole connect timeout (2 s here)
    assert r.first_store is not None
    assert r.first_search is not None
    assert r.serving_again is not None
    assert r.acked > 0
    assert r.lost == 0
