"""One ExpandMemory step's neighbour read: this checkout's statement against an earlier one's, interleaved.

    python -m benchmarks.expand_step --before-src DIR [--rows 10000] [--steps 300] [--data-dir DIR]

An expand step looks around its frontier: the memory itself at depth 1, the up to ``expand_per_depth`` (5)
memories found at depth n for depth n + 1. Its read (store/links.py ``NEIGHBOURS``) ranks every other memory
of the scope by the keyword terms it shares with a frontier memory, then by cosine. Here both checkouts'
statements run on the same requests of benchmarks.search_speed's database (a random scope of ~100 to ~2,000
memories, a random root and frontier of its memories), prepared on one connection each with the generic plan the
service's pool forces, the order swapped every other request; their answers must be the same. Printed: p50 / p95
per frontier size and the ratio. ``--before-src`` is a ``git archive COMMIT | tar -x -C DIR`` tree.
"""

from __future__ import annotations

import json
import random
import time
from datetime import UTC, datetime
from pathlib import Path

from npc_memory.store.links import NEIGHBOURS
from npc_memory.store.view import view_params
from psycopg import sql

from benchmarks.harness import before_after_parser, generic_connection, in_checkout
from benchmarks.search_speed import ensure_seeded
from benchmarks.search_speed_parts import percentiles
from loadtest.pool import load_pool

PER_DEPTH = 5
FRONTIERS = (1, PER_DEPTH)
SOME_IDS = "SELECT id FROM user_memories WHERE user_id = %s AND heroine_id = %s ORDER BY random() LIMIT %s"
BEFORE_STATEMENT = """
from npc_memory.store.links import NEIGHBOURS
print(NEIGHBOURS.as_string(None))
"""


def before_statement(src: Path) -> sql.SQL:
    """The earlier checkout's neighbour read, as text with the same named placeholders."""
    return sql.SQL(in_checkout(src, BEFORE_STATEMENT))  # read from our own earlier checkout, not from input



def main() -> None:
    """Seed if needed, run both statements interleaved, print p50/p95 per frontier size and the ratios."""
    parser = before_after_parser(__doc__, "steps", 300)
    args = parser.parse_args()
    statements: dict[str, sql.SQL | sql.Composed] = {"before": before_statement(args.before_src), "this": NEIGHBOURS}
    pg, scopes = ensure_seeded(args.data_dir / str(args.rows), args.rows, load_pool())
    rng = random.Random(11)
    ms: dict[str, list[float]] = {f"{name} {n}": [] for name in statements for n in FRONTIERS}
    differ = 0
    try:
        conns = {name: generic_connection(pg.url) for name in statements}
        for step in range(args.steps + 10):
            user_id, heroine_id, _ = rng.choice(scopes)
            n = FRONTIERS[step % 2]
            ids = [r["id"] for r in conns["this"].execute(SOME_IDS, (user_id, heroine_id, n + 1))]
            params = {"user_id": user_id, "heroine_id": heroine_id, "id": ids[0], "frontier": ids[1:] if n > 1
                      else ids[:1], "now": datetime.now(UTC), "per_depth": PER_DEPTH} | view_params()
            answers = []
            for name in statements if step % 4 < 2 else list(statements)[::-1]:
                started = time.perf_counter()
                rows = conns[name].execute(statements[name], params, prepare=True).fetchall()
                if step >= 10:  # the first executions decide and cache the plans
                    ms[f"{name} {n}"].append((time.perf_counter() - started) * 1000.0)
                answers.append([(r["id"], r["via"]) for r in rows])
            differ += answers[0] != answers[1]
    finally:
        for conn in conns.values():
            conn.close()
        pg.stop()
    results = {k: percentiles(v) for k, v in ms.items()} | {"different_answers": differ, "steps": args.steps}
    print(f"{args.steps} steps on {args.rows:,} rows, {differ} with different answers\n")
    print("| frontier | before p50 / p95 ms | this p50 / p95 ms | this / before p50 | p95 |")
    print("|---:|---|---|---:|---:|")
    for n in FRONTIERS:
        b, t = results[f"before {n}"], results[f"this {n}"]
        print(f"| {n} | {b['p50']:.2f} / {b['p95']:.2f} | {t['p50']:.2f} / {t['p95']:.2f} | "
              f"{t['p50'] / b['p50']:.2f}x | {t['p95'] / b['p95']:.2f}x |")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
