"""The protocol every embedder implements."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from npc_memory.domain.model import Vector


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed size."""

    @property
    def name(self) -> str:
        """The model name recorded on each row it embeds."""
        ...

    @property
    def dim(self) -> int:
        """The vector size."""
        ...

    @property
    def available(self) -> bool:
        """False for the caller-vectors-only embedder, which cannot embed text itself."""
        ...

    async def embed_queries(self, texts: Sequence[str]) -> list[Vector]:
        """Vectors for search queries."""
        ...

    async def embed_passages(self, texts: Sequence[str]) -> list[Vector]:
        """Vectors for stored facts."""
        ...

    async def ping(self) -> None:
        """Raise UnavailableError when the embedder cannot serve."""
        ...

    async def aclose(self) -> None:
        """Release threads and connections."""
        ...


def normalise(matrix: np.ndarray) -> list[Vector]:
    """Rows of ``matrix`` as unit float32 vectors (a zero row stays zero)."""
    m = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0.0] = 1.0
    unit = m / norms
    return [row for row in unit]
