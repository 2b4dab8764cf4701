"""Service-wide settings kept in the database: what made the stored vectors and the stored terms."""

from __future__ import annotations

from npc_memory.errors import ConfigError
from npc_memory.store.pool import Connection, Database

GET = "SELECT value FROM service_settings WHERE key = %(key)s"
PUT = """
INSERT INTO service_settings (key, value) VALUES (%(key)s, %(value)s)
ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = EXCLUDED.updated_at
"""
CLAIM = "INSERT INTO service_settings (key, value) VALUES (%(key)s, %(value)s) ON CONFLICT (key) DO NOTHING"

MODEL_KEY = "embedding_model"
TERMS_KEY = "text_terms"
"""The text options the stored rows' BM25 terms and meaning signatures were made with (``TextOptions.terms_label``);
migration 0011 records ``plain`` for a database that held rows before the key existed."""


def model_label(name: str, dim: int) -> str:
    """How a model is recorded: its name and vector size."""
    return f"{name}/{dim}"


async def _read(conn: Connection, key: str) -> str | None:
    cur = await conn.execute(GET, {"key": key})
    row = await cur.fetchone()
    return None if row is None else str(row["value"])


async def _claim(db: Database, key: str, value: str) -> str:
    """Record ``value`` under ``key`` unless something is recorded already; return what is recorded."""
    async with db.connection() as conn:
        await conn.execute(CLAIM, {"key": key, "value": value})
        recorded = await _read(conn, key)
    return value if recorded is None else recorded


async def _put(db: Database, key: str, value: str) -> None:
    async with db.connection() as conn:
        await conn.execute(PUT, {"key": key, "value": value})


async def check_embedding_model(db: Database, name: str, dim: int) -> None:
    """Record the model on first start; refuse to serve vectors of another model."""
    label = model_label(name, dim)
    stored = await _claim(db, MODEL_KEY, label)
    if stored != label:
        raise ConfigError(
            f"the database holds vectors of {stored}, but the configured embedder is {label}; "
            "run `npc-memory reembed` to re-embed every row with the configured model"
        )


async def set_embedding_model(db: Database, name: str, dim: int) -> None:
    """Record that every row now carries vectors of this model."""
    await _put(db, MODEL_KEY, model_label(name, dim))


async def recorded_text_terms(db: Database) -> str | None:
    """The text options the stored terms were made with, or None before the first start records them."""
    async with db.connection() as conn:
        return await _read(conn, TERMS_KEY)


async def check_text_terms(db: Database, label: str) -> None:
    """Record the text options on first start; refuse to serve rows whose terms other options made.

    A query tokenised one way does not meet terms stored another way ("traveled" against "travel"), and the
    duplicate rule compares terms, so mixed rows would miss both.
    """
    stored = await _claim(db, TERMS_KEY, label)
    if stored != label:
        raise ConfigError(
            f"the database's keyword terms were made with text options '{stored}', but the configured ones are "
            f"'{label}'; run `npc-memory retokenize` to re-make every row's terms, or configure the options "
            "the rows were made with (NPC_MEMORY_TEXT_*)"
        )


async def set_text_terms(db: Database, label: str) -> None:
    """Record that every row's terms are now made with these text options."""
    await _put(db, TERMS_KEY, label)
