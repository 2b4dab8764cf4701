"""The use cases the API calls: store, search, build a context, walk links, keep timelines."""

from npc_memory.engine.memory import MemoryEngine, utcnow

__all__ = ["MemoryEngine", "utcnow"]
