"""PostgreSQL: migrations, pool and every SQL statement of the service."""

from npc_memory.store.pool import Database

__all__ = ["Database"]
