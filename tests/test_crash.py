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
    """SIGKILL with calls in flight, restart: 0 lost, 0 half batches, replays exact, no orphaned workers."""
    result = await crash_round(tmp_path, crash_database, writers=6, min_acks=30)
    print(f"acked {result.acked} calls ({result.acked_facts} facts), cut off {result.cut_off}, "
          f"restart {result.restart_seconds:.1f} s")
    assert result.cut_off >= 1  # the kill came mid-load, with calls in flight
    assert result.acked >= 30
    assert result.failures == []
    assert (result.lost, result.half_batches, result.replay_mismatches, result.orphans) == (0, 0, 0, 0)
