"""Embedders behind one protocol: the bundled local model, an OpenAI-compatible endpoint, or none."""

from npc_memory.embedding.base import Embedder
from npc_memory.embedding.factory import create_embedder

__all__ = ["Embedder", "create_embedder"]
