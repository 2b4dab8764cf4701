"""The statements that bring a held scope to the table's state, and what they found (store/scope_cache.py holds it).

Every insert or update of a memory stamps the next version of its scope on the row, in commit order (migration
0013), so "the rows stamped after the version held" is exactly what changed; a delete starts a new epoch, after
which the rows must be read whole again. A scope's own rows are synced against its one version (``SYNC``). A
sharing search (``include_shared``) also sees the player's shared rows of every other heroine: such a scope is held
with those rows, and synced against the version of each of the player's scopes (``SHARED_SYNC``), in one statement
and so one snapshot. Only root-timeline rows of a player who never saved are held; a saved player's are not read.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, cast

from psycopg import sql

from npc_memory.domain.model import Scope
from npc_memory.store.compiled import Compiled, compile_statement, fetch_yielding
from npc_memory.store.direct import fetch_direct
from npc_memory.store.pool import Connection
from npc_memory.store.rows import MEMORY_COLUMNS
from npc_memory.store.view import ROOT_TIMELINE, SHARED_ROWS, VISIBLE, view_params, with_view

# One row when nothing changed (the version columns, the memory columns NULL), else one per changed row. An epoch
# other than the one held, or a version below it, means rows went that "stamped after" cannot show: the scope must
# be read whole again, which a search leaves to a background read (no rows come back then), and which a read from
# nothing (since -1) is. A saved player's rows are not read at all.
SYNC = compile_statement(sql.SQL("""
SELECT v.version, v.epoch, v.saved, v.reload, {columns}, m.scope_version, m.terms, m.embedding
FROM (
    SELECT s.version, s.epoch, s.saved, (s.epoch <> %(epoch)s OR s.version < %(since)s) AS reload
    FROM (SELECT COALESCE(c.version, 0) AS version, COALESCE(c.epoch, 0) AS epoch,
                 EXISTS (SELECT 1 FROM player_state p WHERE p.user_id = %(user_id)s) AS saved
          FROM (SELECT 1) one
          LEFT JOIN scope_versions c ON c.user_id = %(user_id)s AND c.heroine_id = %(heroine_id)s) s
) v
LEFT JOIN LATERAL (
    SELECT * FROM user_memories m
    WHERE NOT v.saved AND (NOT v.reload OR %(since)s < 0)
      AND m.user_id = %(user_id)s AND m.heroine_id = %(heroine_id)s AND m.timeline_id = {root}
      AND m.scope_version > CASE WHEN v.reload THEN -1 ELSE %(since)s END
) m ON true
""").format(columns=MEMORY_COLUMNS, root=sql.Literal(ROOT_TIMELINE)))

# One row per scope of the player with a counter (none at all: one row of NULLs), with the rows of it stamped after
# the version held that this scope sees (SHARED_ROWS: its own, and shared ones): every such row when the scope is
# not held yet. A held scope whose epoch moved or whose version went back reads no rows (the whole is read again);
# a held scope missing here (ForgetPlayer dropped its counter) is found missing by the caller. Every scope with
# rows has its counter (migrations 0013 and 0014), so no heroine's shared rows are missed. A visibility is set
# when a row is written and never changed, so a row that is not shared now never was.
SHARED_SYNC = compile_statement(sql.SQL("""
SELECT s.heroine AS synced_heroine, s.version, s.epoch, st.saved, s.reload, {columns}, m.scope_version, m.terms,
       m.embedding
FROM (SELECT EXISTS (SELECT 1 FROM player_state p WHERE p.user_id = %(user_id)s) AS saved) st
LEFT JOIN LATERAL (
    SELECT c.heroine_id AS heroine, c.version, c.epoch, COALESCE(h.since, -1) AS since,
           (h.heroine IS NOT NULL AND (c.epoch <> h.epoch OR c.version < h.since)) AS reload
    FROM scope_versions c
    LEFT JOIN unnest(%(heroines)s::text[], %(since)s::bigint[], %(epochs)s::bigint[]) AS h (heroine, since, epoch)
      ON h.heroine = c.heroine_id
    WHERE c.user_id = %(user_id)s
) s ON true
LEFT JOIN LATERAL (
    SELECT * FROM user_memories m
    WHERE NOT st.saved AND NOT s.reload
      AND m.user_id = %(user_id)s AND m.heroine_id = s.heroine AND m.timeline_id = {root} AND {shared}
      AND m.scope_version > s.since
    OFFSET 0
) m ON true
""").format(columns=MEMORY_COLUMNS, root=sql.Literal(ROOT_TIMELINE), shared=SHARED_ROWS))

# A saved player's scope as the timeline view shows it now (the live timeline): the scope's version and epoch and
# the player's live timeline, with the rows of the ids stamped after the version held (rows, and since migration
# 0016 change entries: a saved player's closes and edits are entries, not updates) as the view shows them
# (VIEW_SYNC); or every row the view shows (VIEW_READ, a scope read whole). Another live timeline (a load), another
# epoch, a version gone back, or no saved state any more: no rows, the scope is read whole again. Nothing changed:
# the view's rows are not read at all (the lateral read is gated on the ids found). Two statements, not one with a
# "whole" parameter: under a generic plan ``whole OR id = ANY(ids)`` cannot be an index condition, and every sync
# read the scope's every row.
_VIEW = """,
head AS MATERIALIZED (
    SELECT s.*, (s.live IS NULL OR s.epoch <> %(epoch)s OR s.version < %(since)s OR s.live <> %(live)s) AS reload
    FROM (SELECT COALESCE(c.version, 0) AS version, COALESCE(c.epoch, 0) AS epoch,
                 (SELECT p.timeline_id FROM player_state p WHERE p.user_id = %(user_id)s) AS live
          FROM (SELECT 1) one
          LEFT JOIN scope_versions c ON c.user_id = %(user_id)s AND c.heroine_id = %(heroine_id)s) s
),
h AS MATERIALIZED (
    SELECT head.*, CASE WHEN NOT head.reload AND head.version > %(since)s THEN ARRAY(
                        SELECT u.id FROM user_memories u
                        WHERE u.user_id = %(user_id)s AND u.heroine_id = %(heroine_id)s
                          AND u.scope_version > %(since)s
                      UNION
                        SELECT c.memory_id FROM memory_changes c
                        WHERE c.user_id = %(user_id)s AND c.heroine_id = %(heroine_id)s
                          AND c.scope_version > %(since)s) END AS ids
    FROM head
)
SELECT h.version, h.epoch, h.live, h.reload, {columns}, m.terms, m.embedding
FROM h
LEFT JOIN LATERAL (SELECT * FROM {visible} m WHERE {rows} OFFSET 0) m ON true
"""
VIEW_SYNC, VIEW_READ = (
    compile_statement(with_view(sql.SQL(_VIEW).format(columns=MEMORY_COLUMNS, visible=VISIBLE, rows=sql.SQL(rows))))
    for rows in ("h.ids IS NOT NULL AND m.id = ANY(h.ids)", "true"))

Connect = Callable[[], AbstractAsyncContextManager[Connection]]
"""Where a sync takes its connection for one use: the pool (a whole scope's read) or the kept one (store/pool.py)."""

Versions = tuple[tuple[str, int, int], ...]
"""A sharing scope's state: each of the player's scopes with a counter as (heroine, version, epoch), by heroine."""


@dataclass(frozen=True)
class ViewState:
    """A saved player's scope as held: its version and epoch, and the player's live timeline."""

    version: int
    epoch: int
    live: int


State = tuple[int, int] | Versions | ViewState
"""What a held scope was synced to: its own (version, epoch), a sharing scope's ``Versions``, or a saved player's
``ViewState``."""


@dataclass(frozen=True)
class Synced:
    """What a sync found: the state to hold next, the rows changed since the state asked about, and what to do.

    ``reload``: rows went that a sync cannot show (a delete), the player saved or loaded, so the scope must be read
    whole again; ``statement``: the statement must serve this scope (a sharing search of a player who saved).
    """

    state: State
    rows: list[dict[str, Any]]
    reload: bool = False
    statement: bool = False


async def sync(connect: Connect, scope: Scope, shared: bool, asked: State | None,
               beside: Callable[[], object] | None = None) -> Synced:
    """The scope's state, with its rows changed since ``asked`` (every row when None: a scope read whole).

    ``shared``: the scope held with the player's shared rows of other heroines. A saved player's own scope is read
    through the timeline view. A whole scope's rows are made a chunk at a time (store/compiled.py
    ``fetch_yielding``); a sync after a store brings one row. ``beside`` runs while the database answers a sync
    of held rows.
    """
    params: dict[str, Any] = {"user_id": scope.user_id, "heroine_id": scope.heroine_id}
    if shared:
        held = cast(Versions, asked or ())
        params |= {"heroines": [h for h, _, _ in held], "since": [v for _, v, _ in held],
                   "epochs": [e for _, _, e in held]}
        return _shared_synced(held, await _fetch(connect, SHARED_SYNC, params, asked is None, beside))
    if isinstance(asked, ViewState):
        return await _view_sync(connect, params, asked, beside)
    version, epoch = cast(tuple[int, int], asked or (-1, -1))
    found = await _fetch(connect, SYNC, params | {"since": version, "epoch": epoch}, asked is None, beside)
    head = found[0]
    if head["saved"]:  # the view decides what a saved player sees: read whole through it (now, if reading whole)
        return await _view_sync(connect, params, None, None) if asked is None else Synced(asked, [], reload=True)
    return Synced((head["version"], head["epoch"]), [r for r in found if r["id"] is not None], head["reload"])


async def _view_sync(connect: Connect, params: dict[str, Any], asked: ViewState | None,
                     beside: Callable[[], object] | None) -> Synced:
    """A saved player's scope as the live view shows it, since ``asked`` (None: whole, ``VIEW_READ``)."""
    since = asked or ViewState(-1, -1, -1)
    params = params | view_params() | {"since": since.version, "epoch": since.epoch, "live": since.live}
    found = await _fetch(connect, VIEW_READ if asked is None else VIEW_SYNC, params, asked is None, beside)
    head = found[0]
    rows = [r for r in found if r["id"] is not None]
    for row in rows:  # every row is as the view has it at this version (the view's rows carry no stamp of their own)
        row["scope_version"] = head["version"]
    if asked is not None:
        return Synced(ViewState(head["version"], head["epoch"], head["live"]), rows, head["reload"])
    if head["live"] is None:  # no saved state any more (a forgotten player): the view's rows are the plain ones
        return Synced((head["version"], head["epoch"]), rows)
    return Synced(ViewState(head["version"], head["epoch"], head["live"]), rows)


async def _fetch(connect: Connect, statement: Compiled, params: dict[str, Any], whole: bool,
                 beside: Callable[[], object] | None) -> list[dict[str, Any]]:
    async with connect() as conn:
        if whole:
            return await fetch_yielding(conn, statement, params)
        return await fetch_direct(conn, statement, params, beside)


def _shared_synced(held: Versions, found: list[dict[str, Any]]) -> Synced:
    """A sharing sync's rows as one state: a held scope gone from the player's counters is read whole again."""
    scopes = {r["synced_heroine"]: (r["version"], r["epoch"], r["reload"])
              for r in found if r["synced_heroine"] is not None}
    gone = any(h not in scopes for h, _, _ in held)
    state = tuple(sorted((h, v, e) for h, (v, e, _) in scopes.items()))
    return Synced(state, [r for r in found if r["id"] is not None],
                  gone or any(r for _, _, r in scopes.values()), found[0]["saved"])
