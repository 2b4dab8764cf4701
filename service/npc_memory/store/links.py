"""Links on demand: one ExpandMemory step (under the scope's lock) and a memory's links by role."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg import sql

from npc_memory.domain.links import Expansion, Link, LinkKind, LinkView
from npc_memory.domain.model import Scope
from npc_memory.errors import NotFoundError
from npc_memory.store.changes import LOCK_SCOPE
from npc_memory.store.link_writes import INSERT_LINK, link_params
from npc_memory.store.pool import Connection, Database
from npc_memory.store.rows import MEMORY_COLUMNS, memory_from_row
from npc_memory.store.view import PICKED, VISIBLE, view_params, with_view
from npc_memory.store.writes import scope_params
from npc_memory.text.words import LINK_NEUTRAL

# Through the player's live timeline view: after a load, a memory of the abandoned timeline is not found, neither
# as the memory to expand nor as a neighbour.
EXISTS = with_view(sql.SQL("SELECT 1 FROM {visible} m WHERE m.id = %(id)s").format(visible=PICKED))

STATE = "SELECT memory_id, depth FROM expand_state WHERE user_id = %(user_id)s AND heroine_id = %(heroine_id)s"

SAVE_STATE = """
INSERT INTO expand_state (user_id, heroine_id, memory_id, depth) VALUES (%(user_id)s, %(heroine_id)s, %(id)s, %(depth)s)
ON CONFLICT (user_id, heroine_id) DO UPDATE SET memory_id = excluded.memory_id, depth = excluded.depth,
                                                updated_at = excluded.updated_at
"""

# The deepest expansion step recorded from a memory (0 before the first).
DEEPEST = """
SELECT COALESCE(max(depth), 0) AS depth, count(*) AS total FROM memory_links
WHERE user_id = %(user_id)s AND heroine_id = %(heroine_id)s AND from_id = %(id)s AND kind = 'related_to'
  AND depth >= 1
"""

FRONTIER = """
SELECT to_id FROM memory_links
WHERE user_id = %(user_id)s AND heroine_id = %(heroine_id)s AND from_id = %(id)s AND kind = 'related_to'
  AND depth = %(depth)s
"""

# The links of memory %(id)s in the scope (either way), and the memory at a link's other end.
ROOT_LINKS = sql.SQL(
    "l.user_id = %(user_id)s AND l.heroine_id = %(heroine_id)s AND (l.from_id = %(id)s OR l.to_id = %(id)s)")
OTHER_END = sql.SQL("CASE WHEN l.from_id = %(id)s THEN l.to_id ELSE l.from_id END")

# Neighbours of the frontier, valid now, not the root, not on the frontier, not linked with the root yet (either
# way, any kind: a memory the game already linked is not "found"), that share a DISTINCTIVE keyword term with a
# frontier memory: one at most a fifth of the scope's valid memories hold (at least 3 in a small scope), and not a
# word that links anything (text/words.py: 좋아하다, 플레이어). A term most memories hold (the heroine's name)
# says nothing, and nearness by meaning alone is no evidence: with the bundled model unrelated facts naming one
# heroine sat at cosine 0.87-0.94 and related ones at 0.92-0.95 (docs/guide/links.md). Those sharing the most
# such terms come first (via: the first shared term), then the nearest by cosine. Vectors are unit length, so
# <#> is -cosine.
# Shared terms are counted by one hash join of every candidate's terms with the frontier's; each pair's cosine is
# computed before the pairs are sorted, so the sort does not carry two vectors a row.
# The root's linked memories are read once into an array (an InitPlan): as a NOT EXISTS per scope row, the generic
# plan compared every row with every link of the root (12,593 rows thrown away by a join filter in one step).
NEIGHBOURS = with_view(sql.SQL(""",
frontier AS MATERIALIZED (
    SELECT f.id, f.embedding, f.terms FROM user_memories f
    WHERE f.user_id = %(user_id)s AND f.heroine_id = %(heroine_id)s AND f.id = ANY(%(frontier)s)
),
valid AS MATERIALIZED (
    SELECT c.id, c.embedding, c.terms FROM {visible} c
    WHERE c.valid_at <= %(now)s AND (c.invalid_at IS NULL OR c.invalid_at > %(now)s)
),
frontier_terms AS MATERIALIZED (
    SELECT DISTINCT f.id, t.term FROM frontier f CROSS JOIN unnest(f.terms) AS t(term)
    WHERE t.term <> ALL(%(neutral)s)
),
distinctive AS MATERIALIZED (
    SELECT ft.id, ft.term FROM frontier_terms ft
    JOIN (SELECT t.term, count(DISTINCT v.id) AS rows FROM valid v CROSS JOIN unnest(v.terms) AS t(term)
          WHERE t.term IN (SELECT term FROM frontier_terms) GROUP BY t.term) df ON df.term = ft.term
    WHERE df.rows <= GREATEST(%(min_term_rows)s, (SELECT count(*) FROM valid) / %(term_share)s)
),
found AS MATERIALIZED (
    SELECT c.id, c.embedding, c.terms FROM valid c
    WHERE c.id <> %(id)s AND c.id <> ALL(%(frontier)s)
      AND c.id <> ALL(ARRAY(SELECT {other_end} FROM memory_links l WHERE {root_links}))
),
shared AS MATERIALIZED (
    SELECT c.id, dt.id AS frontier_id, count(DISTINCT dt.term) AS shared, min(dt.term) AS term
    FROM found c CROSS JOIN unnest(c.terms) AS t(term) JOIN distinctive dt ON dt.term = t.term
    GROUP BY c.id, dt.id
),
pairs AS MATERIALIZED (
    SELECT s.id, s.frontier_id, s.shared, s.term, -(c.embedding <#> f.embedding) AS cosine
    FROM shared s JOIN found c ON c.id = s.id JOIN frontier f ON f.id = s.frontier_id
)
SELECT n.id, n.via FROM (
    SELECT DISTINCT ON (p.id) p.id, p.shared, p.cosine, p.term AS via
    FROM pairs p
    ORDER BY p.id, p.shared DESC, p.cosine DESC
) n
ORDER BY n.shared DESC, n.cosine DESC, n.id
LIMIT %(per_depth)s
""").format(visible=VISIBLE, other_end=OTHER_END, root_links=ROOT_LINKS))

MIN_TERM_ROWS = 3
"""A shared term held by this many of the scope's valid memories or fewer is evidence of a link, in any scope."""
TERM_SHARE = 5
"""In a larger scope, a shared term is evidence while at most 1/TERM_SHARE of the valid memories hold it."""
EVIDENCE_PARAMS = {"min_term_rows": MIN_TERM_ROWS, "term_share": TERM_SHARE, "neutral": sorted(LINK_NEUTRAL)}
"""NEIGHBOURS' parameters of what counts as evidence of a link."""

MEMORIES = sql.SQL("""
SELECT {columns} FROM user_memories m
WHERE m.user_id = %(user_id)s AND m.heroine_id = %(heroine_id)s AND m.id = ANY(%(ids)s)
""").format(columns=MEMORY_COLUMNS)

# Only links whose other end the player's live timeline sees: a link made on an abandoned timeline (to a memory
# written after the save point that was loaded) is not shown.
LINKS_OF = with_view(sql.SQL("""
SELECT l.from_id, l.to_id, l.kind, l.depth, l.via, l.discovered_at FROM memory_links l
WHERE {root_links}
  AND EXISTS (SELECT 1 FROM {visible} m WHERE m.id = {other_end})
ORDER BY l.kind, l.depth, l.discovered_at, l.from_id, l.to_id
""").format(visible=PICKED, other_end=OTHER_END, root_links=ROOT_LINKS))


def link_from_row(row: dict[str, Any]) -> Link:
    """A memory_links row as LINKS_OF selects it."""
    return Link(row["from_id"], row["to_id"], LinkKind(row["kind"]), row["depth"], row["via"],
                row["discovered_at"])


async def _require(conn: Connection, scope: Scope, memory_id: UUID) -> None:
    cur = await conn.execute(EXISTS, scope_params(scope) | view_params() | {"id": memory_id})
    if await cur.fetchone() is None:
        raise NotFoundError(f"no memory {memory_id} in this scope")


async def _start(conn: Connection, scope: Scope, memory_id: UUID | None) -> tuple[UUID, int]:
    """The memory to expand and the depth this call reaches."""
    cur = await conn.execute(STATE, scope_params(scope))
    state = await cur.fetchone()
    if memory_id is None:
        if state is None:
            raise NotFoundError("this scope has expanded no memory yet; name memory_id")
        memory_id = state["memory_id"]
    assert memory_id is not None
    await _require(conn, scope, memory_id)
    cur = await conn.execute(DEEPEST, scope_params(scope) | {"id": memory_id})
    deepest = await cur.fetchone()
    reached = deepest["depth"] if deepest else 0
    if state is not None and state["memory_id"] == memory_id:  # a step that found nothing still counts
        reached = max(reached, state["depth"])
    return memory_id, reached + 1


async def expand(db: Database, scope: Scope, memory_id: UUID | None, per_depth: int, now: datetime) -> Expansion:
    """Go one depth further from a memory (or the scope's last one), linking at most ``per_depth`` new ones.

    Runs under the scope's write lock, so concurrent expands queue and never link one memory twice (the
    primary key would refuse a duplicate anyway).
    """
    async with db.transaction() as conn:
        await conn.execute(LOCK_SCOPE, scope_params(scope))
        root, depth = await _start(conn, scope, memory_id)
        frontier = [root]
        if depth > 1:
            cur = await conn.execute(FRONTIER, scope_params(scope) | {"id": root, "depth": depth - 1})
            frontier = [r["to_id"] for r in await cur.fetchall()]
        found: list[Link] = []
        if frontier:
            cur = await conn.execute(NEIGHBOURS, scope_params(scope) | view_params() | {
                "id": root, "frontier": frontier, "now": now, "per_depth": per_depth,
                **EVIDENCE_PARAMS,
            })
            found = [Link(root, r["id"], LinkKind.RELATED_TO, depth, r["via"]) for r in await cur.fetchall()]
        async with conn.cursor() as c:
            if found:
                await c.executemany(INSERT_LINK, [link_params(scope, link) for link in found])
        await conn.execute(SAVE_STATE, scope_params(scope) | {"id": root, "depth": depth})
        cur = await conn.execute(MEMORIES, scope_params(scope) | {"ids": [link.to_id for link in found]})
        memories = {r["id"]: memory_from_row(r) for r in await cur.fetchall()}
        cur = await conn.execute(DEEPEST, scope_params(scope) | {"id": root})
        total = await cur.fetchone()
    return Expansion(root, depth, [(link, memories[link.to_id]) for link in found], total["total"] if total else 0)


async def links_of(db: Database, scope: Scope, memory_id: UUID) -> LinkView:
    """A memory's parents (what it derives from), children (what derives from it) and related memories."""
    async with db.connection() as conn:
        await _require(conn, scope, memory_id)
        cur = await conn.execute(LINKS_OF, scope_params(scope) | view_params() | {"id": memory_id})
        links = [link_from_row(r) for r in await cur.fetchall()]
    derived = [link for link in links if link.kind is LinkKind.DERIVED_FROM]
    return LinkView(
        parents=[link for link in derived if link.from_id == memory_id],
        children=[link for link in derived if link.to_id == memory_id],
        related=[link for link in links if link.kind is LinkKind.RELATED_TO],
    )
