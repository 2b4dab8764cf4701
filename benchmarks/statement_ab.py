"""The search statement of this checkout against an earlier one's, bare, on benchmarks.search_speed's requests.

    python -m benchmarks.statement_ab --before-src DIR [--rows 10000] [--queries 600] [--data-dir DIR]
                                      [--plan-cache-mode auto|force_generic_plan|force_custom_plan]

benchmarks.view_cost compares the statements on the common-word scopes; this compares them on the ordinary
requests of benchmarks.search_speed (a random scope of its database, ~100 to ~2,000 memories, and a pool
question with its own morphemes and real query vector), where the query's terms are mostly rare. Both
statements are compiled, prepared and run as the service runs them (caller vector, query terms), each on a
connection of its own, interleaved request by request with the order reversed every other request (the later
of two runs on one scope finds warmer pages). ``--before-src`` is a ``git archive COMMIT | tar -x -C DIR`` tree.
"""

from __future__ import annotations

import json
import random
from functools import partial
from pathlib import Path
from typing import Any

from npc_memory.text import Tokenizer

from benchmarks.harness import before_after_parser, in_checkout
from benchmarks.search_speed import ensure_seeded, plan
from benchmarks.search_speed_parts import percentiles, timed
from benchmarks.view_cost import BEFORE_STATEMENT, Statements
from loadtest.pool import load_pool


def before_statement(src: Path, terms: list[str]) -> dict[str, Any]:
    """The earlier checkout's compiled statement for a query of ``terms``."""
    return dict(json.loads(in_checkout(src, BEFORE_STATEMENT, json.dumps(terms))))


def main() -> None:
    """Seed if needed, time both statements interleaved, print p50/p95/p99 and the p50 ratio."""
    parser = before_after_parser(__doc__, "queries", 600)
    parser.add_argument("--plan-cache-mode", default="auto",
                        choices=("auto", "force_generic_plan", "force_custom_plan"))
    args = parser.parse_args()
    pool, tok = load_pool(), Tokenizer()
    pg, scopes = ensure_seeded(args.data_dir / str(args.rows), args.rows, pool)
    try:
        now, old = Statements(pg.url, args.plan_cache_mode), Statements(pg.url, args.plan_cache_mode)
        compiled: dict[int, dict[str, Any]] = {}
        pairs = []
        for ask in plan(random.Random(7), scopes, pool, args.queries):
            terms = tok.query_terms(ask.text)
            count = len(set(terms))
            if count not in compiled:
                compiled[count] = before_statement(args.before_src, terms)
            pairs.append((now.request(ask.vector, ask.user_id, ask.heroine_id, terms),
                          now.before(compiled[count], ask.vector, ask.user_id, ask.heroine_id, terms)))
        for a, b in pairs[:40]:  # plans settle
            now.search(a), old.search(b)
        times: dict[str, list[float]] = {"now": [], "before": []}
        for i, (a, b) in enumerate(pairs):
            calls = [("now", partial(now.search, a)), ("before", partial(old.search, b))]
            for name, call in calls[::-1] if i % 2 else calls:
                times[name] += timed([call])
        got = {k: percentiles(v) for k, v in times.items()}
        row = " | ".join(f"{got[k]['p50']:.2f} / {got[k]['p95']:.2f} / {got[k]['p99']:.2f}" for k in ("now", "before"))
        print(f"| requests | now p50/p95/p99 | before p50/p95/p99 | now / before p50 |\n|---:|---|---|---:|\n"
              f"| {len(pairs)} | {row} | {got['now']['p50'] / got['before']['p50']:.2f}x |")
        if args.json:
            args.json.write_text(json.dumps(got | {"requests": len(pairs)}, indent=1) + "\n", encoding="utf-8")
        now.conn.close()
        old.conn.close()
    finally:
        pg.stop()


if __name__ == "__main__":
    main()
