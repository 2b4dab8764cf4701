"""kill -9 of ``npc-memory serve`` under write load: nothing acknowledged lost, no half batch, exact replays.

One round of ``python -m benchmarks.crash``, against a database of its own on the test server.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from own_database import separate_database

from benchmarks.crash import crash_round


@pytest.fixture
def crash_database(database_url: str) -> Iterator[str]:
    """A database of its own on the test server: the killed service's restarts touch nothing else."""
    with separate_database(database_url, "npc_memory_crash") as url:
        yield url


async def test_kill_9_under_write_load_loses_nothing_acknowledged(crash_database: str, tmp_path: Path) -> None:
    """SIGKILL with calls in flight, restart: 0 lost, 0 half batches, replays exact, no orphaned workers.

    A kill can land in the instant every writer has its answer and none has sent the next call (the writers stop
    sending once the kill is made). Such a round proves nothing about calls in flight, so another round is run, with
    another seed, up to three; every round's durability is checked either way.
    """
    results = []
    for seed in range(3):
        result = await crash_round(tmp_path, crash_database, writers=6, min_acks=30, seed=seed)
        print(f"round {seed + 1}: acked {result.acked} calls ({result.acked_facts} facts), cut off {result.cut_off}, "
              f"restart {result.restart_seconds:.1f} s")
        assert result.acked >= 30
        assert result.failures == []
        assert (result.lost, result.half_batches, result.replay_mismatches, result.orphans) == (0, 0, 0, 0)
        results.append(result)
        if result.cut_off >= 1:
            break
    assert results[-1].cut_off >= 1  # a kill came mid-load, with calls in flight
