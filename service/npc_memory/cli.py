"""The ``npc-memory`` command: serve, migrate, reembed, retain. Configuration is read here, once."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from npc_memory.config import Config, load_config
from npc_memory.errors import ConfigError, NpcMemoryError
from npc_memory.store.pool import Database

if TYPE_CHECKING:
    from npc_memory.server import Running


def _common(parser: argparse.ArgumentParser) -> None:
    """Flags every subcommand shares; each also reads NPC_MEMORY_<FLAG> from the environment."""
    parser.add_argument("--config", help="TOML configuration file (NPC_MEMORY_CONFIG)")
    parser.add_argument("--database-url", dest="database_url",
                        help="PostgreSQL DSN; unset starts the embedded PostgreSQL (NPC_MEMORY_DATABASE_URL)")
    parser.add_argument("--data-dir", dest="data_dir",
                        help="embedded PostgreSQL data directory (NPC_MEMORY_DATA_DIR)")
    parser.add_argument("--embedder", choices=["local", "openai", "none"], help="NPC_MEMORY_EMBEDDER")
    parser.add_argument("--embedding-url", dest="embedding_url", help="OpenAI-compatible base URL")
    parser.add_argument("--embedding-model", dest="embedding_model", help="model name recorded on rows")
    parser.add_argument("--embedding-dim", dest="embedding_dim", type=int, help="vector size (required for none)")
    parser.add_argument("--log-level", default=os.environ.get("NPC_MEMORY_LOG_LEVEL", "INFO"))


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the command."""
    parser = argparse.ArgumentParser(prog="npc-memory", description="Long-term memory for game NPCs over gRPC.")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the gRPC service")
    _common(serve)
    serve.add_argument("--host", help="interface to bind (NPC_MEMORY_HOST, default [::])")
    serve.add_argument("--port", type=int, help="port (NPC_MEMORY_PORT, default 50051; 0 picks one)")
    migrate = sub.add_parser("migrate", help="apply database migrations and exit")
    _common(migrate)
    reembed = sub.add_parser("reembed", help="re-embed every row with the configured model, then record the model")
    _common(reembed)
    reembed.add_argument("--batch-size", dest="batch_size", type=int, default=64, help="rows per embed call")
    retain = sub.add_parser("retain", help="apply the retention policies and prune expired idempotency keys")
    _common(retain)
    return parser


@contextlib.asynccontextmanager
async def _database(config: Config) -> AsyncIterator[Database]:
    """The configured (or embedded) database, migrated, with an open pool; closed on exit."""
    from npc_memory.store.embedded import EmbeddedPostgres
    from npc_memory.store.migrate import migrate

    embedded = None
    url = config.database.url
    if url is None:
        embedded = await asyncio.to_thread(EmbeddedPostgres, config.database.data_dir)
        url = embedded.url
    try:
        await asyncio.to_thread(migrate, url)
        db = Database(url, config.database)
        await db.open()
        try:
            yield db
        finally:
            await db.close()
    finally:
        if embedded is not None:
            await asyncio.to_thread(embedded.stop)


async def _reembed(config: Config, batch_size: int) -> None:
    """Re-embed every row, then record the model so that ``serve`` starts again."""
    from tqdm import tqdm

    from npc_memory.embedding import create_embedder
    from npc_memory.store.reembed import count_rows, reembed_all
    from npc_memory.store.settings import set_embedding_model

    embedder = await create_embedder(config.embedding)
    try:
        if not embedder.available:
            raise ConfigError("reembed needs an embedder that embeds text (not 'none')")
        async with _database(config) as db:
            total = await count_rows(db)
            with tqdm(total=total, unit="row", desc=f"re-embedding with {embedder.name}") as bar:
                done = await reembed_all(db, embedder, batch_size, bar.update)
            await set_embedding_model(db, embedder.name, embedder.dim)
        print(f"re-embedded {done} row(s) with {embedder.name} ({embedder.dim}-d)")
    finally:
        await embedder.aclose()


async def _retain(config: Config) -> None:
    """One maintenance pass: retention policies, expired idempotency keys."""
    from npc_memory.store.retention import maintain

    async with _database(config) as db:
        report = await maintain(db, config, datetime.now(UTC))
    print(f"retired {report.retired} memory(ies) in {report.scopes} scope(s); "
          f"pruned {report.pruned_requests} expired request id(s)")


async def _maintain_every(running: Running, config: Config) -> None:
    """Apply the retention policies on a schedule inside ``serve``; a failed pass is logged and retried later."""
    from npc_memory.store.retention import maintain

    while True:
        await asyncio.sleep(config.retention.interval_minutes * 60)
        try:
            await maintain(running.engine.db, config, datetime.now(UTC))
        except NpcMemoryError as exc:
            logging.getLogger(__name__).warning("maintenance failed: %s", exc)


async def _serve(config: Config) -> None:
    from npc_memory.server import start

    running = await start(config)
    print(f"npc-memory serving on port {running.port}", flush=True)
    if config.retention.interval_minutes > 0:
        running.tasks.append(asyncio.create_task(_maintain_every(running, config)))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    logging.getLogger(__name__).info("stopping")
    await running.stop(config.server.grace_seconds)


async def _migrate(config: Config) -> None:
    from npc_memory.store.embedded import EmbeddedPostgres
    from npc_memory.store.migrate import migrate

    embedded = None
    url = config.database.url
    if url is None:
        embedded = EmbeddedPostgres(config.database.data_dir)
        url = embedded.url
    applied = await asyncio.to_thread(migrate, url)
    print(f"applied {len(applied)} migration(s)")
    if embedded is not None:
        embedded.stop()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``npc-memory``."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        config = load_config(vars(args), os.environ)
        if args.command == "serve":
            asyncio.run(_serve(config))
        elif args.command == "migrate":
            asyncio.run(_migrate(config))
        elif args.command == "reembed":
            asyncio.run(_reembed(config, args.batch_size))
        elif args.command == "retain":
            asyncio.run(_retain(config))
    except NpcMemoryError as exc:
        print(f"npc-memory: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
