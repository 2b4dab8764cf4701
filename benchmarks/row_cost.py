"""What each column of the search statement's scope scan costs per row, on the common-word scopes (bare SQL).

    python -m benchmarks.row_cost [--queries 240] [--data-dir DIR]

The scope scan (store/search_sql.py, SCOPE_ROWS and the BM25 side's columns) computes, for every row of the
scope, the cosine with the query vector, the recency and importance prior, the row's length and each query
term's count. Here each is added in turn to a bare aggregate over the scope's rows (the same row filter,
prepared, binary, generic plan, as the service runs statements), so the differences between lines are what a
column costs over all the scope's rows; the common query's two terms occur in ~80% of them (the common-word
scopes of benchmarks.search_speed_load, seeded once into an embedded PostgreSQL). Requests interleave the lines.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path
from typing import Any

import psycopg
from npc_memory.domain.scoring import RECENCY_EXPONENT_CAP
from npc_memory.store.compiled import Compiled, compile_statement
from npc_memory.store.search_bm25 import bm25_side
from npc_memory.store.search_sql import COSINE, IMPORTANCE, RECENCY
from pgvector.psycopg import register_vector
from psycopg import RawCursor, sql

from benchmarks.search_speed_load import COMMON_DATA_DIR, COMMON_QUERY, common_database
from benchmarks.search_speed_parts import percentiles, timed

ROWS = "FROM user_memories m WHERE m.user_id = %(user_id)s AND m.heroine_id = %(heroine_id)s AND m.timeline_id = 1"
PRIOR = sql.SQL(f"0.1::float8 * {RECENCY} + 0.15::float8 * {IMPORTANCE} AS prior,").format(
    valid_at=sql.Identifier("m", "valid_at"), importance=sql.Identifier("m", "importance"))
# Each line: the columns the scope scan computes per row (the statement's own pieces), and what is aggregated.
LINES: dict[str, tuple[list[sql.Composable], str]] = {
    "the rows alone (max id)": ([], "max(x.id::text)"),
    "+ cosine": ([sql.SQL(COSINE + " AS cosine,")], "max(x.id::text), max(x.cosine)"),
    "+ recency and importance prior": ([sql.SQL(COSINE + " AS cosine,"), PRIOR],
                                       "max(x.id::text), max(x.cosine), max(x.prior)"),
    "+ length and two terms' counts": ([sql.SQL(COSINE + " AS cosine,"), PRIOR, bm25_side(2).scope_columns],
                                       "max(x.id::text), max(x.cosine), max(x.prior), max(x.dl), sum(x.tf0), "
                                       "sum(x.tf1)"),
}


def statement(columns: list[sql.Composable], aggregates: str) -> Compiled:
    """The aggregate over the scope's rows, compiled to ``$n`` as the service's statements are."""
    inner = sql.SQL("SELECT {} m.id " + ROWS).format(sql.Composed(columns))
    return compile_statement(sql.SQL("SELECT {} FROM ({}) x").format(sql.SQL(aggregates), inner))


def main() -> None:
    """Seed the common scopes once, time every line on the largest, print the table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--queries", type=int, default=240)
    parser.add_argument("--data-dir", type=Path, default=COMMON_DATA_DIR)
    args = parser.parse_args()
    with common_database(args.data_dir) as (url, scopes, pool, tok):
        user_id, heroine_id, n = max(scopes, key=lambda s: s[2])
        terms = list(dict.fromkeys(tok.query_terms(COMMON_QUERY)))
        with psycopg.connect(url, autocommit=True) as conn:
            register_vector(conn)
            conn.execute("SET plan_cache_mode = force_generic_plan")
            rng = random.Random(3)
            times: dict[str, list[float]] = {name: [] for name in LINES}
            statements = {name: statement(*line) for name, line in LINES.items()}
            for i in range(args.queries + 20):
                params: dict[str, Any] = {
                    "user_id": user_id, "heroine_id": heroine_id, "t0": terms[0], "t1": terms[1],
                    "embedding": pool.query_vectors[rng.randrange(len(pool.queries))], "now_epoch": 1.8e9,
                    "recency_seconds": 30 * 86400.0, "recency_cap": RECENCY_EXPONENT_CAP}

                def run(compiled: Compiled, params: dict[str, Any] = params) -> None:
                    with RawCursor(conn) as cur:
                        cur.execute(compiled.query, compiled.args(params), prepare=True, binary=True)
                        cur.fetchall()
                for name, compiled in (statements.items() if i % 2 else reversed(statements.items())):
                    ms = timed([lambda c=compiled: run(c)])  # type: ignore[misc]
                    if i >= 20:
                        times[name] += ms
        print(f"scope of {n:,} rows, terms {terms}; p50 / p95 ms over {args.queries} requests\n")
        print("| columns computed for every scope row | p50 / p95 ms | p50 over the line above |\n|---|---|---:|")
        last = None
        for name, t in times.items():
            p = percentiles(t)
            step = "" if last is None else f"+{p['p50'] - last:.2f}"
            print(f"| {name} | {p['p50']:.2f} / {p['p95']:.2f} | {step} |")
            last = p["p50"]


if __name__ == "__main__":
    main()
