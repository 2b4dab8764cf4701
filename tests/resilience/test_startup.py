"""Start-up failures: an unreachable database is a one-line error, and a failed start leaves nothing running."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import psycopg
import pytest
from npc_memory.cli import main
from npc_memory.store.embedded import EmbeddedPostgres
from ports import free_port

NPC_MEMORY = str(Path(sys.executable).with_name("npc-memory"))


@pytest.mark.parametrize("command", ["serve", "migrate", "retain"])
async def test_unreachable_database_is_one_line_and_a_nonzero_exit(command: str) -> None:
    """`npc-memory <command>` against a closed port prints one `npc-memory: ...` line, no traceback, exit 2."""
    env = {**os.environ, "NPC_MEMORY_DATABASE_URL": f"postgresql://npc@127.0.0.1:{free_port()}/npc",
           "NPC_MEMORY_EMBEDDER": "none", "NPC_MEMORY_EMBEDDING_DIM": "384", "NPC_MEMORY_LOG_LEVEL": "ERROR"}
    proc = await asyncio.create_subprocess_exec(
        NPC_MEMORY, command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env,
    )
    async with asyncio.timeout(60):
        out, err = await proc.communicate()
    lines = err.decode().splitlines()
    assert proc.returncode == 2, err.decode()
    assert len(lines) == 1, err.decode()
    assert lines[0].startswith("npc-memory: database unreachable: ")
    assert out == b""


@pytest.fixture(scope="module")
def broken_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An embedded data directory whose database has a `user_memories` table the first migration cannot create.

    So every start fails in the migration, after the embedded server is up.
    """
    data_dir = tmp_path_factory.mktemp("broken")
    pg = EmbeddedPostgres(data_dir)
    with psycopg.connect(pg.url, autocommit=True) as conn:
        conn.execute("CREATE TABLE user_memories (id integer)")
    pg.stop()
    return data_dir


@pytest.mark.parametrize("command", ["migrate", "retain"])
async def test_failed_migration_stops_the_embedded_server(broken_data_dir: Path, command: str) -> None:
    """The migration error reaches the caller and the embedded PostgreSQL started for the command is stopped."""
    pid_file = broken_data_dir / "pgdata" / "postmaster.pid"
    assert not pid_file.exists()
    with pytest.raises(psycopg.errors.DuplicateTable):
        await asyncio.to_thread(main, [command, "--data-dir", str(broken_data_dir), "--log-level", "ERROR"])
    assert not pid_file.exists()
