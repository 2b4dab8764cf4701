"""The ``npc-memory`` command: serve, migrate, reembed, retain. Configuration is read here, once."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from collections.abc import Sequence
from datetime import UTC, datetime

from npc_memory.config import Config, load_config
from npc_memory.errors import ConfigError, NpcMemoryError


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
    parser.add_argument("--extraction-url", dest="extraction_url",
                        help="OpenAI-compatible chat-completions base URL for ExtractMemories (off when empty)")
    parser.add_argument("--extraction-model", dest="extraction_model", help="chat model for ExtractMemories")
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


async def _reembed(config: Config, batch_size: int) -> None:
    """Re-embed every row, then record the model so that ``serve`` starts again."""
    from tqdm import tqdm

    from npc_memory.embedding import create_embedder
    from npc_memory.runtime import open_database
    from npc_memory.store.reembed import count_rows, reembed_all
    from npc_memory.store.settings import set_embedding_model

    embedder = await create_embedder(config.embedding)
    try:
        if not embedder.available:
            raise ConfigError("reembed needs an embedder that embeds text (not 'none')")
        async with open_database(config.database) as db:
            total = await count_rows(db)
            with tqdm(total=total, unit="row", desc=f"re-embedding with {embedder.name}") as bar:
                done = await reembed_all(db, embedder, batch_size, bar.update)
            await set_embedding_model(db, embedder.name, embedder.dim)
        print(f"re-embedded {done} row(s) with {embedder.name} ({embedder.dim}-d)")
    finally:
        await embedder.aclose()


async def _retain(config: Config) -> None:
    """One maintenance pass: retention policies, expired idempotency keys."""
    from npc_memory.runtime import open_database
    from npc_memory.store.retention import maintain

    async with open_database(config.database) as db:
        report = await maintain(db, config.retention.policies, config.write.idempotency_hours, datetime.now(UTC))
    print(f"retired {report.retired} memory(ies) in {report.scopes} scope(s); "
          f"pruned {report.pruned_requests} expired request id(s)")


async def _serve(config: Config) -> None:
    """Serve until SIGTERM or SIGINT, then stop gracefully."""
    from npc_memory.server import serving

    async with serving(config) as port:
        print(f"npc-memory serving on port {port}", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        logging.getLogger(__name__).info("stopping")


async def _migrate(config: Config) -> None:
    """Apply the migrations; an embedded server started for it is stopped whatever happens."""
    from npc_memory.runtime import database_url, migrate_database

    async with database_url(config.database) as url:
        applied = await migrate_database(url, config.database)
    print(f"applied {len(applied)} migration(s)")


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
        # One line, whatever the driver's message spans (libpq's "connection refused" adds a hint line).
        print(f"npc-memory: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
