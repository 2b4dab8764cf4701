"""During a database outage no client sees PostgreSQL's own words (write recovery: docs/decisions/outage-writes.md)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.db_outage import run_outages

# What libpq and the server say about a lost connection; none of it may reach a client.
DRIVER_WORDS = ("terminating connection", "server closed", "connection refused", "FATAL", "consuming input",
                "connection failed", "SSL", "socket")


async def test_outage_errors_are_ours(tmp_path: Path) -> None:
    """One stop/start under load: every failed call carries our message, none the driver's."""
    (r,) = await run_outages(tmp_path, rounds=1, outage_seconds=4.0, writers=3, searchers=3, settle_seconds=1.0,
                             server_env={"NPC_MEMORY_CONNECT_TIMEOUT": "2"})
    print(f"first store {r.first_store}, first search {r.first_search}, failed {r.codes()}")
    assert r.failed
    leaked = {c.details for c in r.failed if any(w.lower() in c.details.lower() for w in DRIVER_WORDS)}
    assert leaked == set()
    assert r.first_store is not None
