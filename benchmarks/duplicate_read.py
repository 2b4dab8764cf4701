"""The store's duplicate read: this checkout's statement against an earlier one's, interleaved, by scope size.

    python -m benchmarks.duplicate_read --before-src DIR [--rows 10000] [--requests 300] [--data-dir DIR]

Every store reads, before it writes, the scope's rows the batch could duplicate (store/writes.py
``DUPLICATE_CANDIDATES``: the same normalised text, or the same terms and meaning with a close cosine). Here both
checkouts' reads run on the same batches against benchmarks.search_speed's database (scopes of ~100 to ~2,000
memories, analysed), compiled, prepared and binary on one connection each with the generic plan the service's
pool forces, the order swapped every other request; their answers must be the same. A batch is one fact (a new
text, or a repeat of a stored one) or 32 facts of the scope (every fourth a repeat). Printed: p50 / p95 per batch
kind and scope size, and the ratio. ``--before-src`` is a ``git archive COMMIT | tar -x -C DIR`` tree.
"""

from __future__ import annotations

import json
import random
import time
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from npc_memory.domain.model import ContentType, NewMemory, PreparedMemory, Scope, Speaker, Subject
from npc_memory.domain.write_rules import content_key
from npc_memory.store.compiled import Compiled, compile_statement
from npc_memory.store.migrate import migrate
from npc_memory.store.writes import DUPLICATE_CANDIDATES, duplicate_params
from psycopg import sql

from benchmarks.harness import before_after_parser, generic_connection, in_checkout
from benchmarks.search_speed import ensure_seeded
from benchmarks.search_speed_parts import percentiles
from loadtest.pool import load_pool

THRESHOLD = 0.9
KINDS = ("one new fact", "one repeated fact", "32 facts")
SIZES = ((0, 500, "up to 500"), (500, 1000, "500-1,000"), (1000, 10**9, "over 1,000"))
SOME_ROWS = """SELECT content, terms, meaning, subject, subject_id, embedding FROM user_memories
WHERE user_id = %s AND heroine_id = %s AND invalid_at IS NULL ORDER BY random() LIMIT %s"""
BEFORE_STATEMENT = """
from npc_memory.store.writes import DUPLICATE_CANDIDATES
print(DUPLICATE_CANDIDATES.as_string(None))
"""


def before_statement(src: Path) -> Compiled:
    """The earlier checkout's duplicate read, compiled as this checkout compiles its own."""
    return compile_statement(sql.SQL(in_checkout(src, BEFORE_STATEMENT)))  # our own earlier checkout's text


def item(row: Mapping[str, Any], repeat: bool) -> PreparedMemory:
    """A fact of the batch: a stored row's text again, or a new text with one more term (no duplicate)."""
    content = row["content"] if repeat else f"{row['content']} 그리고 또 {uuid.uuid4().hex[:6]}"
    terms = tuple(row["terms"]) if repeat else (*row["terms"], "그리고")
    fact = NewMemory(Speaker.USER, Subject(row["subject"]), row["subject_id"], ContentType.FACT, content)
    return PreparedMemory(uuid.uuid4(), fact, datetime.now(UTC), terms, content_key(content),
                          tuple(row["meaning"] or ()), embedding=row["embedding"].to_numpy(), embedding_model="bench")


def batch(conn: psycopg.Connection[dict[str, Any]], scope: Scope, kind: str) -> list[PreparedMemory]:
    """The facts of one request of ``kind``."""
    n = 32 if kind == "32 facts" else 1
    rows = conn.execute(SOME_ROWS, (scope.user_id, scope.heroine_id, n)).fetchall()
    return [item(r, kind == "one repeated fact" or (n > 1 and i % 4 == 0)) for i, r in enumerate(rows)]


def run(conn: psycopg.Connection[dict[str, Any]], statement: Compiled, params: Mapping[str, Any]) -> list[Any]:
    """The read's (batch index, row id) pairs, run as the write path runs it."""
    with psycopg.RawCursor(conn) as cur:
        cur.execute(statement.query, statement.args(params), prepare=True, binary=True)
        return sorted((r["idx"], r["id"]) for r in cur.fetchall())


def size_name(rows: int) -> str:
    """The scope-size bucket of a scope of ``rows`` memories."""
    return next(name for low, high, name in SIZES if low <= rows < high)


def report(ms: Mapping[str, Sequence[float]], differ: int, requests: int, rows: int) -> dict[str, Any]:
    """Print the table; the summary for ``--json``."""
    results: dict[str, Any] = {k: percentiles(v) for k, v in ms.items() if len(v) > 1}
    results |= {"different_answers": differ, "requests": requests}
    print(f"{requests} requests on {rows:,} rows, {differ} with different answers\n")
    print("| batch | scope | before p50 / p95 ms | this p50 / p95 ms | this / before p50 | p95 |")
    print("|---|---|---|---|---:|---:|")
    for kind in KINDS:
        for _, _, size in SIZES:
            b, t = results.get(f"before {kind} {size}"), results.get(f"this {kind} {size}")
            if b and t:
                print(f"| {kind} | {size} | {b['p50']:.2f} / {b['p95']:.2f} | {t['p50']:.2f} / {t['p95']:.2f} | "
                      f"{t['p50'] / b['p50']:.2f}x | {t['p95'] / b['p95']:.2f}x |")
    return results


def main() -> None:
    """Seed if needed, run both reads interleaved, print p50/p95 per batch kind and scope size, and the ratios."""
    parser = before_after_parser(__doc__, "requests", 300)
    args = parser.parse_args()
    statements = {"before": before_statement(args.before_src), "this": compile_statement(DUPLICATE_CANDIDATES)}
    pg, scopes = ensure_seeded(args.data_dir / str(args.rows), args.rows, load_pool())
    migrate(pg.url)  # a database seeded by an earlier checkout gets this one's indexes
    rng = random.Random(17)
    ms: dict[str, list[float]] = {}
    differ = 0
    try:
        conns = {name: generic_connection(pg.url) for name in statements}
        conns["this"].execute("ANALYZE user_memories")
        for step in range(args.requests + 12):
            user_id, heroine_id, rows = rng.choice(scopes)
            scope, kind = Scope(user_id, heroine_id), KINDS[step % len(KINDS)]
            items = batch(conns["this"], scope, kind)
            # Earlier statements also took the batch's vectors and the threshold (and earlier still, term keys).
            params = duplicate_params(scope, items) | {
                "embeddings": [i.embedding for i in items], "threshold": THRESHOLD,
                "term_keys": [" ".join(i.terms) for i in items]}
            answers = []
            for name in statements if step % 2 == 0 else list(statements)[::-1]:
                started = time.perf_counter()
                answers.append(run(conns[name], statements[name], params))
                if step >= 12:  # the first executions plan and cache the statements
                    ms.setdefault(f"{name} {kind} {size_name(rows)}", []).append(
                        (time.perf_counter() - started) * 1000.0)
            differ += answers[0] != answers[1]
    finally:
        for conn in conns.values():
            conn.close()
        pg.stop()
    results = report(ms, differ, args.requests, args.rows)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
