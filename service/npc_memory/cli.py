"""The ``npc-memory`` command: serve, migrate, reembed, retokenize, retain. Configuration is read here, once."""

from __future__ import annotations

import argparse
import asyncio
import io
import logging
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from npc_memory.config import Config, load_config
from npc_memory.errors import ConfigError, NpcMemoryError
from npc_memory.ops.logs import configure_logging
from npc_memory.ops.loop import run as run_loop

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
"""What stops a command: ``kill``, Ctrl-C, or its terminal closing. Each unwinds the command, so an embedded
PostgreSQL it started is stopped (by default SIGTERM and SIGHUP end Python without running any clean-up)."""


def _unwind(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


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
    parser.add_argument("--log-level", default=os.environ.get("NPC_MEMORY_LOG_LEVEL", "INFO"),
                        help="DEBUG, INFO, WARNING or ERROR (NPC_MEMORY_LOG_LEVEL)")


class _Help(argparse.HelpFormatter):
    """Help that shows each flag's default when it has one (``--batch-size`` is 64 for reembed, 500 for retokenize)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if action.default in (None, False, argparse.SUPPRESS) or "%(default)" in text or not action.option_strings:
            return text
        return f"{text} (default: %(default)s)"


class _Parser(argparse.ArgumentParser):
    """An argument parser whose help shows defaults."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Help)
        super().__init__(*args, **kwargs)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("npc-memory")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the command."""
    parser = _Parser(prog="npc-memory", description="Long-term memory for game NPCs over gRPC.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)  # subcommands are _Parsers too
    serve = sub.add_parser("serve", help="run the gRPC service")
    _common(serve)
    serve.add_argument("--host", help="interface to bind (NPC_MEMORY_HOST; default [::] with API keys, else localhost)")
    serve.add_argument("--port", type=int, help="port (NPC_MEMORY_PORT, default 50051; 0 picks one)")
    serve.add_argument("--workers", type=int, help="processes sharing the port (NPC_MEMORY_WORKERS, default 1)")
    serve.add_argument("--event-loop", choices=["auto", "uvloop", "asyncio"],
                       help="asyncio loop implementation (NPC_MEMORY_EVENT_LOOP, default auto: uvloop if installed)")
    serve.add_argument("--api-keys-file", dest="api_keys_file", help="TOML [[keys]] file (NPC_MEMORY_API_KEYS_FILE)")
    serve.add_argument("--tls-cert", dest="tls_cert", help="PEM certificate chain (NPC_MEMORY_TLS_CERT)")
    serve.add_argument("--tls-key", dest="tls_key", help="PEM private key (NPC_MEMORY_TLS_KEY)")
    serve.add_argument("--tls-client-ca", dest="tls_client_ca",
                       help="CA of client certificates: mutual TLS (NPC_MEMORY_TLS_CLIENT_CA)")
    serve.add_argument("--http-port", dest="http_port", type=int,
                       help="HTTP port of the inspector, gRPC-Web and MCP; off by default, 0 picks one "
                       "(NPC_MEMORY_HTTP_PORT)")
    serve.add_argument("--metrics-port", dest="metrics_port", type=int,
                       help="Prometheus /metrics port, 0 off (NPC_MEMORY_METRICS_PORT)")
    serve.add_argument("--tracing", action="store_const", const="true",
                       help="send OpenTelemetry traces, configured by the OTEL_* variables (NPC_MEMORY_TRACING)")
    migrate = sub.add_parser("migrate", help="apply database migrations and exit")
    _common(migrate)
    migrate.add_argument("--citus", action="store_true",
                         help="then distribute every table by user_id on this Citus coordinator "
                              "(docs/guide/scaling.md)")
    migrate.add_argument("--shard-count", dest="shard_count", type=int,
                         help="with --citus: shards per distributed table (Citus's default is 32)")
    reembed = sub.add_parser("reembed", help="re-embed every row with the configured model (a stated dialogue's "
                             "turns with their context, every other row alone), then record the model")
    _common(reembed)
    reembed.add_argument("--batch-size", dest="batch_size", type=int, default=64, help="rows per embed call")
    retokenize = sub.add_parser("retokenize", help="re-make every row's keyword terms with the configured text "
                                "options (NPC_MEMORY_TEXT_*), then record them")
    _common(retokenize)
    retokenize.add_argument("--batch-size", dest="batch_size", type=int, default=500, help="rows per transaction")
    retain = sub.add_parser("retain", help="apply the retention policies and prune expired idempotency keys")
    _common(retain)
    _portable_parsers(sub)
    mcp = sub.add_parser("mcp", help="memory as MCP tools on stdin/stdout for an LLM-driven NPC (docs/guide/mcp.md)")
    _common(mcp)
    mcp.add_argument("--target", default=os.environ.get("NPC_MEMORY_TARGET", ""),
                     help="host:port of a running npc-memory serve to call (NPC_MEMORY_TARGET); unset runs the "
                     "service in this process on the configured database")
    mcp.add_argument("--target-ca", dest="target_ca", default=os.environ.get("NPC_MEMORY_TARGET_CA", ""),
                     help="PEM CA of the target's TLS certificate: call it over TLS (NPC_MEMORY_TARGET_CA)")
    mcp.add_argument("--api-key", dest="api_key", default=os.environ.get("NPC_MEMORY_API_KEY", ""),
                     help="the API key every tool call presents (NPC_MEMORY_API_KEY)")
    mcp.add_argument("--api-keys-file", dest="api_keys_file",
                     help="without --target: the keys file the service checks (NPC_MEMORY_API_KEYS_FILE)")
    return parser


def _portable_parsers(sub: Any) -> None:
    """``export`` and ``import`` (docs/guide/export-import.md)."""
    export = sub.add_parser("export", help="write players' memories as JSON Lines to standard output")
    _common(export)
    which = export.add_mutually_exclusive_group(required=True)
    which.add_argument("--user-id", dest="user_id", help="the player to export")
    which.add_argument("--all", dest="all_players", action="store_true",
                       help="every player (a progress bar on standard error)")
    load = sub.add_parser("import", help="load an export file into the database, whole or not at all")
    _common(load)
    load.add_argument("file", help="the export file, or - for standard input")
    load.add_argument("--replace", action="store_true",
                      help="erase what the database holds of the file's players first (default: refuse such a file)")


def _utf8(stream: TextIO) -> TextIO:
    """A standard stream read or written as UTF-8, whatever the locale says."""
    if isinstance(stream, io.TextIOWrapper):
        stream.reconfigure(encoding="utf-8")
    return stream


def _open(path: str) -> TextIO:
    """The export file to import (ConfigError if it cannot be read)."""
    try:
        return open(path, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from exc


async def _export(config: Config, user_id: str | None) -> None:
    """Write one player (or every player) to standard output."""
    from tqdm import tqdm

    from npc_memory.engine.portable import export_players
    from npc_memory.server.runtime import open_database

    out = _utf8(sys.stdout)
    async with open_database(config.database) as db:
        with tqdm(unit="player", desc="exporting", file=sys.stderr, disable=user_id is not None) as bar:
            moved = await export_players(db, user_id, out.write, on_players=bar.reset, on_player=bar.update)
    out.flush()
    print(f"exported {moved.records} record(s) of {moved.players} player(s)", file=sys.stderr)


async def _import(config: Config, path: str, replace: bool) -> None:
    """Load an export file (or standard input) in one transaction."""
    from npc_memory.engine.portable import import_players
    from npc_memory.server.runtime import open_database

    with _utf8(sys.stdin) if path == "-" else _open(path) as lines:
        async with open_database(config.database) as db:
            moved = await import_players(db, lines, replace)
    print(f"imported {moved.records} record(s) of {moved.players} player(s)")


async def _reembed(config: Config, batch_size: int) -> None:
    """Re-embed every row, then record the model so that ``serve`` starts again."""
    from tqdm import tqdm

    from npc_memory.embedding import create_embedder
    from npc_memory.server.runtime import open_database
    from npc_memory.store.reembed import reembed_all
    from npc_memory.store.settings import set_embedding_model
    from npc_memory.store.sweep import count_rows

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


async def _retokenize(config: Config, batch_size: int) -> None:
    """Re-make every row's terms, then record the text options so that ``serve`` starts with them."""
    from tqdm import tqdm

    from npc_memory.server.runtime import open_database
    from npc_memory.store.retokenize import retokenize_all
    from npc_memory.store.settings import set_text_terms
    from npc_memory.store.sweep import count_rows
    from npc_memory.text import Tokenizer

    tokenizer = await asyncio.to_thread(Tokenizer, options=config.text)
    label = config.text.terms_label()
    async with open_database(config.database) as db:
        total = await count_rows(db)
        with tqdm(total=total, unit="row", desc=f"re-tokenising with {label}") as bar:
            done = await retokenize_all(db, tokenizer, batch_size, bar.update)
        await set_text_terms(db, label)
    print(f"re-tokenised {done} row(s) with text options {label}")


async def _retain(config: Config) -> None:
    """One maintenance pass: retention policies, expired idempotency keys."""
    from npc_memory.server.runtime import open_database
    from npc_memory.store.retention import maintain

    async with open_database(config.database) as db:
        report = await maintain(db, config.retention.policies, config.write.idempotency_hours, datetime.now(UTC))
    print(f"retired {report.retired} memory(ies) in {report.scopes} scope(s); "
          f"pruned {report.pruned_requests} expired request id(s)")


async def _serve(config: Config, reuse_port: bool = False) -> None:
    """Serve until SIGTERM or SIGINT, then stop gracefully."""
    from npc_memory.server import serving

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, stop.set)
    async with serving(config, reuse_port) as (port, _health, http_port):
        print(f"npc-memory serving on port {port}", flush=True)
        if http_port is not None:
            print(f"npc-memory inspector, gRPC-Web and MCP on http port {http_port}", flush=True)
        await stop.wait()
        logging.getLogger(__name__).info("stopping: draining in-flight calls for up to %ss",
                                         config.server.grace_seconds)


async def _migrate(config: Config, citus: bool, shard_count: int | None) -> None:
    """Apply the migrations (then, with ``citus``, distribute the tables); an embedded server is stopped after."""
    from npc_memory.server.runtime import database_url, migrate_database

    if shard_count is not None and (not citus or shard_count < 1):
        raise ConfigError("--shard-count needs --citus and a positive number")
    async with database_url(config.database) as url:
        applied = await migrate_database(url, config.database)
        print(f"applied {len(applied)} migration(s)", flush=True)
        if citus:
            await asyncio.to_thread(_distribute, url, shard_count)
            print("distributed every table by user_id")


def _distribute(url: str, shard_count: int | None) -> None:
    """Run the Citus distribution step on the coordinator at ``url``."""
    import psycopg

    from npc_memory.store.citus import distribute_for_citus

    try:
        with psycopg.connect(url, autocommit=True) as conn:
            distribute_for_citus(conn, shard_count)
    except psycopg.Error as exc:
        raise ConfigError(f"distributing the tables failed: {exc}") from exc


def _worker(config: Config, log_level: str) -> None:
    """One of ``--workers`` processes: its own pool and model on the shared port."""
    from npc_memory.ops.logs import configure_logging

    configure_logging(log_level, config.security.log_json)
    run_loop(_serve(config, reuse_port=True), config.server.event_loop)


async def _serve_workers(config: Config, log_level: str) -> None:
    """Start the database once, then ``workers`` server processes on one port; SIGTERM is passed on to each."""
    from npc_memory.server.runtime import database_url, migrate_database

    if config.server.port == 0:
        raise ConfigError("--workers needs a fixed --port (each process binds the same one)")
    async with database_url(config.database) as url:
        await migrate_database(url, config.database)
        spawn = multiprocessing.get_context("spawn")
        procs = []
        for i in range(config.server.workers):
            metrics = config.security.metrics_port + i if config.security.metrics_port else 0
            child = replace(config, database=replace(config.database, url=url),
                            server=replace(config.server, workers=1),
                            security=replace(config.security, metrics_port=metrics))
            proc = spawn.Process(target=_worker, args=(child, log_level), name=f"npc-memory-worker-{i}")
            proc.start()
            procs.append(proc)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in STOP_SIGNALS:
            loop.add_signal_handler(sig, stop.set)
        done: asyncio.Future[Any] = asyncio.ensure_future(asyncio.gather(*(asyncio.to_thread(p.join) for p in procs)))
        stopped: asyncio.Future[Any] = asyncio.ensure_future(stop.wait())
        await asyncio.wait([done, stopped], return_when=asyncio.FIRST_COMPLETED)
        stopped.cancel()
        for proc in procs:
            if proc.is_alive() and proc.pid is not None:
                os.kill(proc.pid, signal.SIGTERM)
        await done


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``npc-memory``."""
    args = build_parser().parse_args(argv)
    if threading.current_thread() is threading.main_thread():  # a caller's thread cannot take signals
        for sig in (signal.SIGTERM, signal.SIGHUP):  # SIGINT raises KeyboardInterrupt already
            signal.signal(sig, _unwind)
    try:
        config = load_config(vars(args), os.environ)
        configure_logging(args.log_level, config.security.log_json)
        if args.command == "serve" and config.server.workers > 1:
            run_loop(_serve_workers(config, args.log_level), config.server.event_loop)
        elif args.command == "serve":
            run_loop(_serve(config), config.server.event_loop)
        elif args.command == "migrate":
            asyncio.run(_migrate(config, args.citus, args.shard_count))
        elif args.command == "reembed":
            asyncio.run(_reembed(config, args.batch_size))
        elif args.command == "retokenize":
            asyncio.run(_retokenize(config, args.batch_size))
        elif args.command == "retain":
            asyncio.run(_retain(config))
        elif args.command == "mcp":
            from npc_memory.server.mcp import run_stdio

            ca = Path(args.target_ca).expanduser() if args.target_ca else None
            run_loop(run_stdio(config, args.target or None, args.api_key, ca), config.server.event_loop)
        elif args.command == "export":
            asyncio.run(_export(config, None if args.all_players else args.user_id))
        elif args.command == "import":
            asyncio.run(_import(config, args.file, args.replace))
    except NpcMemoryError as exc:
        # One line, whatever the driver's message spans (libpq's "connection refused" adds a hint line).
        print(f"npc-memory: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
