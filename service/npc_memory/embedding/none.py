"""The embedder for deployments where callers always supply their own vectors."""

from __future__ import annotations

from collections.abc import Sequence

from npc_memory.domain.model import Vector


class CallerVectorsOnly:
    """Has a size and a name but embeds nothing; the engine asks callers for vectors instead."""

    def __init__(self, dim: int, name: str) -> None:
        self._dim = dim
        self._name = name

    @property
    def name(self) -> str:
        """The configured model name of the callers' vectors."""
        return self._name

    @property
    def dim(self) -> int:
        """The configured vector size."""
        return self._dim

    @property
    def available(self) -> bool:
        """Never able to embed text."""
        return False

    async def embed_queries(self, texts: Sequence[str]) -> list[Vector]:
        """Never called: the engine checks ``available`` first."""
        raise NotImplementedError("caller-supplied vectors only")

    async def embed_passages(self, texts: Sequence[str]) -> list[Vector]:
        """Never called: the engine checks ``available`` first."""
        raise NotImplementedError("caller-supplied vectors only")

    async def ping(self) -> None:
        """Nothing to reach."""

    async def aclose(self) -> None:
        """Nothing to release."""
