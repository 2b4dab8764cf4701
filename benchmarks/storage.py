"""Bytes per stored memory (heap, TOAST, each index) and the time migration 0005 takes, on seeded data.

    python -m benchmarks.storage [--rows 100000] [--requests 10000] [--json out.json]

A new embedded PostgreSQL (in a temporary directory) is migrated up to 0004, seeded with binary COPY
(loadtest.seed: Korean memories in scopes of ~100-2,000 rows, real 384-d e5 vectors, supersession chains),
vacuumed; then migration 0005 (keys that name the player) is applied and timed. Sizes are read after it, with
pg_relation_size per relation, so they are the schema as it now ships. ``--requests`` idempotency records with
a typical two-fact response are written through the service's own statement and measured the same way.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg
from npc_memory.domain.model import StoreOutcome, StoreResult
from npc_memory.store import idempotency
from npc_memory.store.embedded import EmbeddedPostgres
from npc_memory.store.migrate import migrate
from psycopg.types.json import Jsonb

from loadtest.pool import load_pool
from loadtest.seed import seed

KEY_RULE_VERSION = 5

# Every relation belonging to a table: the heap, its TOAST table (and TOAST index), each index.
RELATIONS = """
SELECT 'heap' AS part, pg_relation_size(c.oid) AS bytes FROM pg_class c WHERE c.oid = %(table)s::regclass
UNION ALL
SELECT 'toast', pg_total_relation_size(c.reltoastrelid) FROM pg_class c
WHERE c.oid = %(table)s::regclass AND c.reltoastrelid <> 0
UNION ALL
SELECT 'index ' || i.indexrelid::regclass::text, pg_relation_size(i.indexrelid)
FROM pg_index i WHERE i.indrelid = %(table)s::regclass
UNION ALL
SELECT 'total', pg_total_relation_size(%(table)s::regclass)
"""

SHAPE = """
SELECT count(*) AS rows, avg(octet_length(content)) AS content_bytes, avg(cardinality(terms)) AS terms,
       avg(pg_column_size(embedding)) AS vector_bytes, avg(pg_column_size(m.*)) AS row_bytes,
       count(*) FILTER (WHERE invalid_at IS NULL) AS valid_rows
FROM user_memories m
"""


def sizes(conn: psycopg.Connection[Any], table: str) -> dict[str, int]:
    """Bytes of each part of ``table``."""
    return {part: int(b) for part, b in conn.execute(RELATIONS, {"table": table}).fetchall()}


def write_requests(conn: psycopg.Connection[Any], n: int) -> None:
    """``n`` idempotency records as StoreMemories leaves them: two facts, one superseding an older row."""
    results = [
        StoreResult(uuid.uuid4(), StoreOutcome.CREATED, ()),
        StoreResult(uuid.uuid4(), StoreOutcome.CREATED, (uuid.uuid4(),)),
    ]
    with conn.cursor() as cur:
        cur.executemany(idempotency.RECORD, [
            {"user_id": f"storage-p{i // 3:06d}", "heroine_id": "letia", "request_id": str(uuid.uuid4()),
             "fingerprint": uuid.uuid4().hex + uuid.uuid4().hex, "response": Jsonb(idempotency.encode(results))}
            for i in range(n)
        ])


def main(argv: list[str] | None = None) -> int:
    """Seed, time migration 0005, print bytes per row."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000, help="memories to seed")
    parser.add_argument("--requests", type=int, default=10_000, help="idempotency records to write")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv)

    pool = load_pool()
    with tempfile.TemporaryDirectory(prefix="npc-storage-") as folder:
        pg = EmbeddedPostgres(Path(folder))
        try:
            migrate(pg.url, target=KEY_RULE_VERSION - 1)
            started = time.perf_counter()
            seed(pg.url, args.rows, prefix="storage", pool=pool, progress=False, migrate_first=False)
            seeded = time.perf_counter() - started
            with psycopg.connect(pg.url, autocommit=True) as conn:
                conn.execute("VACUUM ANALYZE user_memories")
                before = sizes(conn, "user_memories")
            started = time.perf_counter()
            applied = migrate(pg.url)
            migration_s = time.perf_counter() - started
            with psycopg.connect(pg.url, autocommit=True) as conn:
                write_requests(conn, args.requests)
                conn.execute("VACUUM ANALYZE")
                memories = sizes(conn, "user_memories")
                requests = sizes(conn, "store_requests")
                shape = conn.execute(SHAPE).fetchone()
                version = conn.execute("SHOW server_version").fetchone()
        finally:
            pg.stop()
    assert shape is not None
    assert version is not None
    rows = int(shape[0])
    out = {
        "machine": platform.platform(), "postgres": version[0], "rows": rows, "valid_rows": int(shape[5]),
        "seed_seconds": round(seeded, 1), "migrations_applied": applied,
        "migration_0005_seconds": round(migration_s, 2),
        "avg_content_bytes": round(float(shape[1]), 1), "avg_terms": round(float(shape[2]), 1),
        "avg_vector_bytes": round(float(shape[3]), 1), "avg_row_bytes": round(float(shape[4]), 1),
        "user_memories_bytes": memories, "user_memories_bytes_before_0005": before,
        "store_requests_rows": args.requests, "store_requests_bytes": requests,
    }
    print(f"{rows:,} memories ({int(shape[5]):,} valid), seeded in {seeded:.0f}s; PostgreSQL {version[0]}")
    print(f"migration 0005 on {rows:,} rows: {migration_s:.2f}s")
    print(f"average row: {float(shape[4]):.0f} B (vector {float(shape[3]):.0f} B, content {float(shape[1]):.0f} B, "
          f"{float(shape[2]):.1f} terms)")
    print(f"{'user_memories':<48}{'MiB':>10}{'B/row':>10}")
    for part, b in memories.items():
        print(f"  {part:<46}{b / 2**20:>10.1f}{b / rows:>10.0f}")
    print(f"{'store_requests':<48}{'MiB':>10}{'B/record':>10}")
    for part, b in requests.items():
        print(f"  {part:<46}{b / 2**20:>10.1f}{b / args.requests:>10.0f}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
