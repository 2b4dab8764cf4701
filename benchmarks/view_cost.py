"""What the timeline view costs a search, beside the plain scan, on the common-word scopes (bare SQL, one run).

    python -m benchmarks.view_cost [--queries 300] [--data-dir DIR] [--explain] [--before-src DIR]
                                   [--plan-cache-mode auto|force_generic_plan|force_custom_plan]

The common-word scopes of benchmarks.search_speed_load (500 and 2,000 memories, both query terms in ~80% of
them) are seeded into an embedded PostgreSQL once. Each scope is copied to a second player who saved once
(a player_state row on the root timeline, no change entries): the same rows, read through the view's
branches. For every request, interleaved so all see the same load: the raw cosine of every scope row from the
table (top 50, the floor of an exact search); the service's search statement (caller vector and the common
query's terms, compiled, prepared, binary, as the service runs it) for the player who never saved (the plain
branch) and for the player who saved (the view's branches: what every player paid before the plain branch).
``--explain`` also prints EXPLAIN ANALYZE of both statements on the 2,000-row scope. ``--before-src`` names an
earlier checkout (``git archive COMMIT | tar -x -C DIR``): its search statement for the same request, compiled by
its own code in a child process, is timed too, interleaved, on a connection of its own (each connection's
prepared statement settles on its plan as the service's do). ``--plan-cache-mode`` sets PostgreSQL's choice
between a prepared statement's generic and custom plans on every connection (the service leaves it ``auto``,
which settles on the generic plan once that looks no costlier than the custom ones).
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, get_args

import psycopg
from npc_memory.domain.model import Scope, SearchQuery, Weights
from npc_memory.store.pool import PlanCacheMode
from npc_memory.store.search_sql import compiled_search, search_params
from pgvector.psycopg import register_vector
from psycopg import RawCursor

from benchmarks.harness import in_checkout
from benchmarks.search_speed_load import COMMON_DATA_DIR, COMMON_QUERY, common_database
from benchmarks.search_speed_parts import percentiles, timed

PER_SIDE = 50
# Parameters an earlier statement may name that this code no longer passes, with the value the request means.
RETIRED_PARAMS: dict[str, Any] = {"rrf": False}
BEFORE_STATEMENT = """
import json, sys
from datetime import UTC, datetime
import numpy as np
from npc_memory.domain.model import Scope, SearchQuery, Weights
from npc_memory.store.pool import PlanCacheMode
from npc_memory.store.search_sql import compiled_search
q = SearchQuery(scope=Scope("u", "h"), text="t", limit=10, weights=Weights(), now=datetime.now(UTC),
                embedding=np.zeros(384, dtype=np.float32))
c = compiled_search(q, json.loads(sys.argv[1]), "bm25")
print(json.dumps({"query": c.query.decode(), "names": list(c.names)}))
"""
SAVED = "saved-"

# The scope's rows again under a player who saved: the same ids (keys name the player), content and vectors.
COPY_SCOPE = """
CREATE TEMP TABLE copied AS SELECT * FROM user_memories WHERE user_id = %(user_id)s AND heroine_id = %(heroine_id)s;
UPDATE copied SET user_id = %(saved)s;
INSERT INTO user_memories SELECT * FROM copied;
DROP TABLE copied;
INSERT INTO player_state (user_id, timeline_id) VALUES (%(saved)s, 1);
"""

RAW = """
SELECT id, -(embedding <#> $1::vector) AS cosine FROM user_memories WHERE user_id = $2 AND heroine_id = $3
ORDER BY cosine DESC LIMIT 50
"""


def ensure_saved_copies(url: str, scopes: list[tuple[str, str, int]]) -> None:
    """Copy each common scope to a player with a state row, once."""
    with psycopg.connect(url, autocommit=True) as conn:
        for user_id, heroine_id, _n in scopes:
            saved = SAVED + user_id
            if conn.execute("SELECT 1 FROM player_state WHERE user_id = %s", (saved,)).fetchone() is None:
                for statement in COPY_SCOPE.strip().split(";\n"):
                    conn.execute(statement.rstrip(";"), {"user_id": user_id, "heroine_id": heroine_id, "saved": saved})
        conn.execute("VACUUM ANALYZE user_memories")


class Statements:
    """The raw scan and the service's search statement over one connection."""

    def __init__(self, url: str, plan_cache_mode: str = "auto") -> None:
        self.conn = psycopg.connect(url, autocommit=True)
        self.conn.execute(psycopg.sql.SQL("SET plan_cache_mode = {}").format(psycopg.sql.Literal(plan_cache_mode)))
        register_vector(self.conn)
        self.now = datetime.now(UTC)

    def raw(self, vector: Any, user_id: str, heroine_id: str) -> int:
        """The floor: every row's cosine from the table, best 50."""
        with RawCursor(self.conn) as cur:
            cur.execute(RAW, [vector, user_id, heroine_id], prepare=True, binary=True)
            return len(cur.fetchall())

    def request(self, vector: Any, user_id: str, heroine_id: str, terms: list[str]) -> tuple[Any, list[Any]]:
        """The service's statement and its arguments for a caller-vector search with ``terms``."""
        query = SearchQuery(scope=Scope(user_id, heroine_id), text=COMMON_QUERY, limit=10, weights=Weights(),
                            now=self.now, embedding=vector)
        statement = compiled_search(query, terms, "bm25")
        return statement.query, statement.args(search_params(query, terms, PER_SIDE, "bm25"))

    def before(self, compiled: dict[str, Any], vector: Any, user_id: str, heroine_id: str,
               terms: list[str]) -> tuple[Any, list[Any]]:
        """The earlier code's statement for the same request, its arguments taken from this code's parameters."""
        query = SearchQuery(scope=Scope(user_id, heroine_id), text=COMMON_QUERY, limit=10, weights=Weights(),
                            now=self.now, embedding=vector)
        params = RETIRED_PARAMS | search_params(query, terms, PER_SIDE, "bm25")
        return compiled["query"].encode(), [params[n] for n in compiled["names"]]

    def search(self, request: tuple[Any, list[Any]]) -> list[Any]:
        """Run the statement as the service does; its rows."""
        with RawCursor(self.conn) as cur:
            cur.execute(request[0], request[1], prepare=True, binary=True)
            return cur.fetchall()

    def explain(self, request: tuple[Any, list[Any]]) -> str:
        """EXPLAIN ANALYZE of the statement run once unprepared (a custom plan: the parameters' values known)."""
        with RawCursor(self.conn) as cur:
            cur.execute(b"EXPLAIN (ANALYZE, COSTS OFF, TIMING ON) " + request[0], request[1])
            return "\n".join(r[0] for r in cur.fetchall())


def _ms(x: dict[str, float]) -> str:
    return f"{x['p50']:.2f} / {x['p95']:.2f} / {x['p99']:.2f}"


def time_scope(st: Statements, old: Statements, compiled: dict[str, Any] | None, scope: tuple[str, str, int],
               terms: list[str], vectors: list[Any], explain: bool) -> None:
    """Time the raw scan and the statements on one scope, interleaved request by request; print a table row."""
    user_id, heroine_id, n = scope
    plain = [st.request(v, user_id, heroine_id, terms) for v in vectors]
    saved = [st.request(v, SAVED + user_id, heroine_id, terms) for v in vectors]
    before = [st.before(compiled, v, user_id, heroine_id, terms) if compiled else p
              for p, v in zip(plain, vectors, strict=True)]
    for p, s, v, b in zip(plain[:30], saved[:30], vectors[:30], before[:30], strict=True):  # plans settle
        st.search(p), st.search(s), st.raw(v, user_id, heroine_id), old.search(b)
    times: dict[str, list[float]] = {"raw": [], "plain": [], "saved": [], "before": []}
    for i, (p, s, v, b) in enumerate(zip(plain, saved, vectors, before, strict=True)):
        # Every other request runs the statements in reverse order: the one run right after another on the same
        # scope finds its pages warmer, which favoured whichever came later by up to ~10%.
        calls: list[tuple[str, Callable[[], Any]]] = [
            ("raw", partial(st.raw, v, user_id, heroine_id)), ("plain", partial(st.search, p)),
            ("saved", partial(st.search, s)), *([("before", partial(old.search, b))] if compiled else [])]
        for name, call in calls[::-1] if i % 2 else calls:
            times[name] += timed([call])
    got = {k: percentiles(v or [float("nan")]) for k, v in times.items()}
    print(f"| {n:,} | {_ms(got['raw'])} | {_ms(got['plain'])} | {_ms(got['saved'])} | "
          f"{got['plain']['p50'] / got['saved']['p50']:.2f}x | {_ms(got['before'])} | "
          f"{got['plain']['p50'] / got['before']['p50']:.2f}x |")
    plans = st.conn.execute("SELECT sum(generic_plans), sum(custom_plans) FROM pg_prepared_statements "
                            "WHERE statement LIKE '%%scope_rows%%'").fetchone()
    print(f"<!-- prepared search statements: generic plans, custom plans = {plans} -->")
    if explain:
        print("\n-- never saved\n" + st.explain(plain[0]) + "\n\n-- saved\n" + st.explain(saved[0]) + "\n")


def main() -> None:
    """Seed once, time the statements interleaved per scope, print p50/p95/p99 (ms)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--data-dir", type=Path, default=COMMON_DATA_DIR)
    parser.add_argument("--explain", action="store_true")
    parser.add_argument("--before-src", type=Path, help="an earlier checkout whose statement is timed beside")
    parser.add_argument("--plan-cache-mode", default="auto", choices=get_args(PlanCacheMode))
    args = parser.parse_args()
    with common_database(args.data_dir) as (url, scopes, pool, tok):
        ensure_saved_copies(url, scopes)
        terms = tok.query_terms(COMMON_QUERY)
        st, old = Statements(url, args.plan_cache_mode), Statements(url, args.plan_cache_mode)
        compiled = None
        if args.before_src:
            compiled = json.loads(in_checkout(args.before_src, BEFORE_STATEMENT, json.dumps(terms)))
        rng = random.Random(7)
        print("| scope rows | raw cosine scan, top 50 | search, never saved (plain branch) | "
              "search, saved (view branches) | plain / view p50 | before-src statement, never saved | "
              "now / before p50 |\n|---:|---|---|---|---:|---|---:|")
        for scope in scopes:
            vectors = [pool.query_vectors[rng.randrange(len(pool.queries))] for _ in range(args.queries)]
            time_scope(st, old, compiled, scope, terms, vectors, args.explain and scope[2] == max(s[2] for s in scopes))
        st.conn.close()
        old.conn.close()


if __name__ == "__main__":
    main()
