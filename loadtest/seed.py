"""Seed realistic Korean memories at a chosen scale straight into PostgreSQL with binary COPY.

Rows go in through ``COPY ... (FORMAT BINARY)`` with pgvector's binary dumper, not through the API, so a
million rows take minutes instead of the hours the embedder would need: each row's vector is the real e5
vector of its generated sentence, taken from the embedding pool (loadtest/pool.py). Scopes (one player with
one heroine) hold ~100 to ~2,000 memories, log-uniformly; slots form supersession chains (older versions
closed by newer ones), as the write path would leave them. BM25 terms and meaning signatures come from
npc_memory.text.Tokenizer,
content keys from npc_memory.domain.write_rules.content_key, and each row's columns and values from the
store's own INSERT (store/writes.py: INSERT_COLUMNS, insert_params), exactly as the service writes them; the
model label is the store's (store/settings.py).

Reusable: ``copy_memories(conn, rows)`` loads any iterable of rows (dicts of COLUMNS → value).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import random
import sys
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
from npc_memory.domain.model import ContentType, NewMemory, PreparedMemory, Scope, Speaker, Subject, Tier
from npc_memory.domain.write_rules import content_key
from npc_memory.embedding.local import MODEL_NAME as MODEL
from npc_memory.store import settings
from npc_memory.store.migrate import migrate
from npc_memory.store.writes import INSERT_COLUMNS, insert_params
from npc_memory.text import Analysis, TextOptions, Tokenizer
from pgvector.psycopg import register_vector
from psycopg import sql
from tqdm import tqdm

from loadtest import korean
from loadtest.pool import Pool, load_pool

MIN_SCOPE = 100
MAX_SCOPE = 2000
GAME_DAYS = korean.GAME_DAYS
COPY_CHUNK = 20_000


# What the service's INSERT sets, plus the two timestamps the service leaves to the table's defaults (a seeded
# row was written in the past).
COLUMNS = (*INSERT_COLUMNS, "created_at", "updated_at")
COPY = sql.SQL("COPY user_memories ({columns}) FROM STDIN WITH (FORMAT BINARY)").format(
    columns=sql.SQL(", ").join(map(sql.Identifier, COLUMNS))
)
# Binary COPY must be told each column's type; the table itself says.
COLUMN_TYPES = """
SELECT attname, format_type(atttypid, NULL) FROM pg_attribute
WHERE attrelid = 'user_memories'::regclass AND attnum > 0 AND NOT attisdropped
"""


def copy_memories(conn: psycopg.Connection[Any], rows: Iterable[dict[str, Any]]) -> int:
    """Load rows with one binary COPY on ``conn`` (pgvector registered here); return how many were written."""
    register_vector(conn)
    types = dict(conn.execute(COLUMN_TYPES).fetchall())
    count = 0
    with conn.cursor() as cur, cur.copy(COPY) as copy:
        copy.set_types([types[c] for c in COLUMNS])
        for row in rows:
            copy.write_row([row[c] for c in COLUMNS])
            count += 1
    return count


@dataclass(frozen=True)
class ScopeInfo:
    """A seeded scope and how many rows it holds (valid and closed)."""

    user_id: str
    heroine_id: str
    rows: int


class _Texts:
    """Terms and content keys of the pool's passages, computed once; day-prefixed variants composed."""

    def __init__(self, pool: Pool, options: TextOptions) -> None:
        self.pool = pool
        self.index = pool.passage_index()
        self._tok = Tokenizer(options=options)
        self._analyses: dict[str, Analysis] = {}

    def _analysis(self, text: str) -> Analysis:
        if text not in self._analyses:
            self._analyses[text] = self._tok.analyse(text)
        return self._analyses[text]

    def terms(self, text: str) -> list[str]:
        return list(self._analysis(text).terms)

    def meaning(self, text: str) -> list[str]:
        return list(self._analysis(text).meaning)


def _scope_size(rng: random.Random, low: int, high: int) -> int:
    return round(math.exp(rng.uniform(math.log(low), math.log(high))))


def _scope_rows(
    rng: random.Random, texts: _Texts, user_id: str, heroine: str, size: int, now: datetime
) -> list[dict[str, Any]]:
    """``size`` distinct memories of one scope; slot facts chained so only the newest version is valid."""
    facts = [f for f in korean.facts(heroine) if f.content in texts.index]
    chosen: list[tuple[korean.Fact, str]] = [(f, f.content) for f in rng.sample(facts, min(size, len(facts)))]
    seen = {c for _, c in chosen}
    while len(chosen) < size:  # larger scopes repeat a sentence on another game day (same vector)
        base = rng.choice(facts)
        text = f"{rng.randint(1, GAME_DAYS)}일차: {base.content}"
        if text not in seen:
            seen.add(text)
            chosen.append((base, text))
    drafts: list[dict[str, Any]] = []
    for fact, text in chosen:
        valid_at = now - timedelta(seconds=rng.uniform(0, GAME_DAYS * 86_400))
        day = text.split(":", 1)[0] if text != fact.content else ""
        terms = (texts.terms(day) if day else []) + texts.terms(fact.content)
        meaning = sorted((texts.meaning(day) if day else []) + texts.meaning(fact.content))
        drafts.append({
            "id": uuid.uuid4(), "fact": fact, "text": text, "valid_at": valid_at, "terms": terms,
            "meaning": meaning,
            "importance": min(10, max(1, fact.importance + rng.randint(-1, 1))),
            "tier": rng.choices(("knowledge", "source", "gist"), (8, 1, 1))[0],
        })
    by_slot: dict[str, list[dict[str, Any]]] = {}
    for d in drafts:
        if d["fact"].slot and d["fact"].subject == "user":
            by_slot.setdefault(d["fact"].slot, []).append(d)
    for chain in by_slot.values():
        chain.sort(key=lambda d: d["valid_at"])
        for older, newer in itertools.pairwise(chain):
            older["invalid_at"], older["superseded_by"] = newer["valid_at"], newer["id"]
    scope = Scope(user_id, heroine)
    rows = []
    for d in drafts:
        fact = d["fact"]
        closed = d.get("invalid_at")
        new = NewMemory(
            speaker=Speaker(fact.speaker), subject=Subject(fact.subject),
            subject_id={"user": "user", "world": "world"}.get(fact.subject, heroine),
            content_type=ContentType(fact.content_type), content=d["text"], importance=d["importance"],
            tier=Tier(d["tier"]), slot=fact.slot if fact.subject == "user" else None,
            metadata={"source": "loadtest"},
        )
        prepared = PreparedMemory(
            id=d["id"], fact=new, valid_at=d["valid_at"],
            embedding=texts.pool.passage_vectors[texts.index[fact.content]], embedding_model=MODEL,
            terms=tuple(d["terms"]), meaning=tuple(d["meaning"]), content_key=content_key(d["text"]),
        )
        successor = (d["superseded_by"], closed) if closed else None
        row = insert_params(scope, prepared, successor)
        row["created_at"], row["updated_at"] = d["valid_at"], closed or d["valid_at"]
        rows.append(row)
    return rows


def plan_scopes(
    total: int, prefix: str, seed: int, low: int = MIN_SCOPE, high: int = MAX_SCOPE
) -> list[tuple[str, str, int]]:
    """(user_id, heroine_id, size) for scopes adding up to exactly ``total`` rows."""
    rng = random.Random(f"{seed}/{prefix}")
    out: list[tuple[str, str, int]] = []
    left = total
    i = 0
    while left > 0:
        size = min(left, _scope_size(rng, low, high))
        if left - size < low and left - size > 0:  # never leave a tiny last scope
            size = left if left <= high else left - low
        out.append((f"{prefix}-p{i:06d}", rng.choice(korean.HEROINES), size))
        left -= size
        i += 1
    return out


def recorded_options(url: str) -> TextOptions:
    """The text options the database's terms are made with (a new database records the defaults, as serve would)."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(settings.CLAIM, {"key": settings.TERMS_KEY, "value": TextOptions().terms_label()})
        row = conn.execute(settings.GET, {"key": settings.TERMS_KEY}).fetchone()
    return TextOptions() if row is None else TextOptions.from_label(str(row[0]))


def seed(
    url: str, total: int, *, prefix: str = "lt", seed_value: int = 42, pool: Pool | None = None,
    low: int = MIN_SCOPE, high: int = MAX_SCOPE, progress: bool = True, migrate_first: bool = True,
) -> list[ScopeInfo]:
    """Migrate (unless told not to), then COPY ``total`` rows of new scopes named ``{prefix}-pNNNNNN``."""
    if migrate_first:
        migrate(url)
    pool = pool or load_pool()
    texts = _Texts(pool, recorded_options(url))
    plan = plan_scopes(total, prefix, seed_value, low, high)
    rng = random.Random(seed_value)
    now = datetime.now(UTC)
    scopes: list[ScopeInfo] = []
    bar = tqdm(total=total, unit="row", unit_scale=True, desc=f"seeding {prefix}", disable=not progress,
               file=sys.stderr)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(settings.CLAIM, {"key": settings.MODEL_KEY, "value": settings.model_label(MODEL, pool.dim)})
        conn.execute("SET synchronous_commit = off")
        batch: list[dict[str, Any]] = []
        for user_id, heroine, size in plan:
            batch += _scope_rows(rng, texts, user_id, heroine, size, now)
            scopes.append(ScopeInfo(user_id, heroine, size))
            if len(batch) >= COPY_CHUNK:
                with conn.transaction():
                    bar.update(copy_memories(conn, batch))
                batch = []
        if batch:
            with conn.transaction():
                bar.update(copy_memories(conn, batch))
        conn.execute("ANALYZE user_memories")
    bar.close()
    return scopes


def write_manifest(path: Path, scopes: Sequence[ScopeInfo]) -> None:
    """The scopes Locust users pick from: JSON ``{"rows": N, "scopes": [[user_id, heroine_id, rows], ...]}``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"rows": sum(s.rows for s in scopes), "scopes": [[s.user_id, s.heroine_id, s.rows] for s in scopes]}
    path.write_text(json.dumps(payload), encoding="utf-8")


def read_manifest(path: Path) -> list[ScopeInfo]:
    """Scopes from a manifest written by ``write_manifest``."""
    payload = json.loads(path.read_text(encoding="utf-8"))
    return [ScopeInfo(u, h, int(n)) for u, h, n in payload["scopes"]]


def main(argv: list[str] | None = None) -> int:
    """``python -m loadtest.seed --database-url DSN --rows 100000 --manifest scopes.json``."""
    parser = argparse.ArgumentParser(description="Seed Korean memories into PostgreSQL with binary COPY.")
    parser.add_argument("--database-url", required=True, help="PostgreSQL DSN (the service's database)")
    parser.add_argument("--rows", type=int, default=10_000, help="rows to add (10k to 1M)")
    parser.add_argument("--prefix", default="lt", help="user_id prefix of the new scopes (pick a new one to add)")
    parser.add_argument("--seed", type=int, default=42, help="random seed")
    parser.add_argument("--min-scope", type=int, default=MIN_SCOPE)
    parser.add_argument("--max-scope", type=int, default=MAX_SCOPE)
    parser.add_argument("--manifest", type=Path, default=Path("scopes.json"), help="where to write the scope list")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    scopes = seed(args.database_url, args.rows, prefix=args.prefix, seed_value=args.seed,
                  low=args.min_scope, high=args.max_scope)
    write_manifest(args.manifest, scopes)
    elapsed = time.perf_counter() - started
    print(f"seeded {args.rows} rows in {len(scopes)} scopes in {elapsed:.1f}s "
          f"({args.rows / elapsed:,.0f} rows/s); manifest {args.manifest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
