"""Start-up in one place: the database (embedded or at a URL) migrated with its pool open, and the engine on it.

Every command (serve, migrate, retain, reembed) and the tests' fixtures start through these context managers, so
what is started is stopped again on every path out, a failed start included.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from threadpoolctl import threadpool_limits

from npc_memory.config import Config, DatabaseConfig, KeywordBackend
from npc_memory.embedding import Embedder, create_embedder
from npc_memory.engine import MemoryEngine
from npc_memory.errors import ConfigError
from npc_memory.extraction.service import Extractor
from npc_memory.search.held import ScopeCache
from npc_memory.store.embedded import EmbeddedPostgres
from npc_memory.store.keyword import ResolvedKeywordBackend
from npc_memory.store.migrate import migrate
from npc_memory.store.pool import Database
from npc_memory.store.search_pgroonga import pgroonga_available, prepare_pgroonga
from npc_memory.store.settings import check_embedding_model, check_text_terms, recorded_text_terms
from npc_memory.text import TextOptions, Tokenizer
from npc_memory.text.process_pool import AnalysisPool

log = logging.getLogger(__name__)


@contextlib.asynccontextmanager
async def database_url(config: DatabaseConfig) -> AsyncIterator[str]:
    """The configured URL, or that of the embedded PostgreSQL, started for the block and stopped after it."""
    if config.url is not None:
        yield config.url
        return
    embedded = await asyncio.to_thread(EmbeddedPostgres, config.data_dir)
    try:
        yield embedded.url
    finally:
        await asyncio.to_thread(embedded.stop)


async def migrate_database(url: str, config: DatabaseConfig) -> list[int]:
    """Apply the missing migrations; return the versions applied (UnavailableError if unreachable)."""
    return await asyncio.to_thread(migrate, url, None, config.connect_timeout)


@contextlib.asynccontextmanager
async def open_database(config: DatabaseConfig) -> AsyncIterator[Database]:
    """The configured (or embedded) database, migrated, with an open pool; all of it closed on exit."""
    async with database_url(config) as url:
        await migrate_database(url, config)
        db = Database(url, config.pool())
        await db.open()
        try:
            yield db
        finally:
            await db.close()


def resolve_backend(configured: KeywordBackend, available: bool) -> ResolvedKeywordBackend:
    """The keyword side to use: ``auto`` picks PGroonga when installed; asking for a missing PGroonga is an error."""
    if configured == "pgroonga" and not available:
        raise ConfigError("keyword_backend is pgroonga, but the database has no pgroonga extension available")
    if configured == "auto":
        return "pgroonga" if available else "bm25"
    return configured


async def keyword_backend(db: Database, configured: KeywordBackend) -> ResolvedKeywordBackend:
    """Resolve the configured backend against the server; prepare PGroonga's index when it is the one."""
    backend = resolve_backend(configured, await pgroonga_available(db))
    if backend == "pgroonga":
        await prepare_pgroonga(db)
    log.info("keyword search: %s", backend)
    return backend


async def text_options(db: Database, config: Config) -> TextOptions:
    """The text options to serve with: the configured ones, or, none set, those the database's terms were made with.

    A database whose terms older defaults made keeps working after an upgrade that changed the defaults; set
    options must match the record (ConfigError otherwise); a new database records what is configured.
    """
    recorded = await recorded_text_terms(db)
    if recorded is not None and not config.text_set and recorded != config.text.terms_label():
        try:
            options = TextOptions.from_label(recorded, config.text.question_words)
        except ValueError as exc:
            raise ConfigError(f"service_settings.text_terms: {exc}") from exc
        log.info("keyword terms: this database's were made with text options '%s' (the defaults are '%s'); "
                 "serving with its own (`npc-memory retokenize` moves them to the defaults)",
                 recorded, config.text.terms_label())
        return options
    await check_text_terms(db, config.text.terms_label())
    return config.text


async def build_engine(config: Config, db: Database, embedder: Embedder) -> MemoryEngine:
    """The engine over an open database and embedder, once they agree on the model and the text options."""
    await check_embedding_model(db, embedder.name, embedder.dim)
    options = await text_options(db, config)
    backend = await keyword_backend(db, config.search.keyword_backend)
    tokenizer = await asyncio.to_thread(Tokenizer, options=options)
    rows = config.search.scope_cache_rows
    # The held scopes' cosines are one small matrix product per search: on two BLAS threads the second one keeps
    # spinning long after each product, taking a core from PostgreSQL and the model; on one thread the product is
    # as quick and nothing runs after it.
    threadpool_limits(1, user_api="blas")
    return MemoryEngine(db=db, embedder=embedder, tokenizer=tokenizer, keyword_backend=backend,
                        write_settings=config.write, search_settings=config.search,
                        scope_cache=ScopeCache(rows) if rows > 0 else None)


@contextlib.asynccontextmanager
async def open_engine(config: Config) -> AsyncIterator[MemoryEngine]:
    """The engine on the opened database with the configured embedder and tokenising processes; all closed on exit."""
    async with open_database(config.database) as db:
        embedder = await create_embedder(config.embedding)
        pool = None
        engine: MemoryEngine | None = None
        try:
            engine = await build_engine(config, db, embedder)
            if config.write.tokenize_processes > 0:
                pool = await AnalysisPool.start(
                    config.write.tokenize_processes, engine.tokenizer.options, config.write.tokenize_process_min_chars)
                engine.analysis_pool = pool
            yield engine
        finally:
            if engine is not None and engine.scope_cache is not None:
                await engine.scope_cache.close()
            if pool is not None:
                await asyncio.to_thread(pool.shutdown)
            await embedder.aclose()


@contextlib.asynccontextmanager
async def open_extractor(config: Config, engine: MemoryEngine) -> AsyncIterator[Extractor | None]:
    """The extractor on the engine when an endpoint is configured (None otherwise); its client closed on exit."""
    if not config.extraction.enabled:
        yield None
        return
    extractor = Extractor.create(engine, config.extraction)
    try:
        yield extractor
    finally:
        await extractor.aclose()
