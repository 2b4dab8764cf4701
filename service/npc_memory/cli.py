"""The ``npc-memory`` command: serve, migrate. Configuration is read here, once."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from collections.abc import Sequence

from npc_memory.config import Config, load_config
from npc_memory.errors import NpcMemoryError


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
    return parser


async def _serve(config: Config) -> None:
    from npc_memory.server import start

    running = await start(config)
    print(f"npc-memory serving on port {running.port}", flush=True)
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
    except NpcMemoryError as exc:
        print(f"npc-memory: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
