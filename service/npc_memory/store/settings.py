"""Service-wide settings kept in the database: the embedding model the stored vectors belong to."""

from __future__ import annotations

from npc_memory.errors import ConfigError
from npc_memory.store.pool import Database

GET = "SELECT value FROM service_settings WHERE key = %(key)s"
PUT = """
INSERT INTO service_settings (key, value) VALUES (%(key)s, %(value)s)
ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()
"""
CLAIM = "INSERT INTO service_settings (key, value) VALUES (%(key)s, %(value)s) ON CONFLICT (key) DO NOTHING"

MODEL_KEY = "embedding_model"


def model_label(name: str, dim: int) -> str:
    """How a model is recorded: its name and vector size."""
    return f"{name}/{dim}"


async def check_embedding_model(db: Database, name: str, dim: int) -> None:
    """Record the model on first start; refuse to serve vectors of another model."""
    label = model_label(name, dim)
    async with db.connection() as conn:
        await conn.execute(CLAIM, {"key": MODEL_KEY, "value": label})
        cur = await conn.execute(GET, {"key": MODEL_KEY})
        row = await cur.fetchone()
    stored = row["value"] if row else label
    if stored != label:
        raise ConfigError(
            f"the database holds vectors of {stored}, but the configured embedder is {label}; "
            "run `npc-memory reembed` to re-embed every row with the configured model"
        )


async def set_embedding_model(db: Database, name: str, dim: int) -> None:
    """Record that every row now carries vectors of this model."""
    async with db.connection() as conn:
        await conn.execute(PUT, {"key": MODEL_KEY, "value": model_label(name, dim)})
