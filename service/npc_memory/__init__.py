"""npc-memory: long-term memory for game NPCs, served over gRPC."""

__version__ = "0.1.0"
