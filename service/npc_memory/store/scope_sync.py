"""The statements that bring a held scope to the table's state, and what they found (search/held.py holds it).

Every insert or update of a memory stamps the next version of its scope on the row, in commit order (migration
0013), so "the rows stamped after the version held" is exactly what changed; a delete starts a new epoch, after
which the rows must be read whole again. A scope's own rows are synced against its one version (``SYNC``). A
sharing search (``include_shared``) also sees the player's shared rows of every other heroine: such a scope is held
with those rows, and synced against the version of each of the player's scopes (``SHARED_SYNC``), in one statement
and so one snapshot. A player who saved sees the rows as the timeline view shows them: such a scope is read and
synced through the view (``VIEW_READ``, ``VIEW_SYNC``; with the shared rows ``SHARED_VIEW_READ``,
``SHARED_VIEW_SYNC``), by the rows and change entries stamped since.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, cast

from psycopg import sql

from npc_memory.domain.model import Scope
from npc_memory.store.compiled import Compiled, compile_statement, fetch_all, fetch_yielding
from npc_memory.store.pool import Connection
from npc_memory.store.rows import MEMORY_COLUMNS
from npc_memory.store.view import PICKED, ROOT_TIMELINE, SHARED_ROWS, VISIBLE, view_params, visible, with_view

# One row when nothing changed (the version columns, the memory columns NULL), else one per changed row. An epoch
# other than the one held, or a version below it, means rows went that "stamped after" cannot show: the scope must
# be read whole again, which a search leaves to a background read (no rows come back then), and which a read from
# nothing (since -1) is. A saved player's rows are not read here (the view's statements read them).
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
_PLAYER_SCOPES = sql.SQL("""
    SELECT c.heroine_id AS heroine, c.version, c.epoch, COALESCE(h.since, -1) AS since,
           (h.heroine IS NOT NULL AND (c.epoch <> h.epoch OR c.version < h.since)) AS reload
    FROM scope_versions c
    LEFT JOIN unnest(%(heroines)s::text[], %(since)s::bigint[], %(epochs)s::bigint[]) AS h (heroine, since, epoch)
      ON h.heroine = c.heroine_id
    WHERE c.user_id = %(user_id)s""")
"""Each of the player's scopes with a counter, against the state held (three arrays): what to read since, or reload."""

SHARED_SYNC = compile_statement(sql.SQL("""
SELECT s.heroine AS synced_heroine, s.version, s.epoch, st.saved, s.reload, {columns}, m.scope_version, m.terms,
       m.embedding
FROM (SELECT EXISTS (SELECT 1 FROM player_state p WHERE p.user_id = %(user_id)s) AS saved) st
LEFT JOIN LATERAL ({scopes}
) s ON true
LEFT JOIN LATERAL (
    SELECT * FROM user_memories m
    WHERE NOT st.saved AND NOT s.reload
      AND m.user_id = %(user_id)s AND m.heroine_id = s.heroine AND m.timeline_id = {root} AND {shared}
      AND m.scope_version > s.since
    OFFSET 0
) m ON true
""").format(columns=MEMORY_COLUMNS, root=sql.Literal(ROOT_TIMELINE), shared=SHARED_ROWS, scopes=_PLAYER_SCOPES))

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
# A sync reads the ids stamped since (PICKED); a scope read whole reads every row (VISIBLE).
VIEW_SYNC, VIEW_READ = (
    compile_statement(with_view(sql.SQL(_VIEW).format(columns=MEMORY_COLUMNS, visible=rows_of, rows=sql.SQL(rows))))
    for rows_of, rows in ((PICKED, "h.ids IS NOT NULL AND m.id = ANY(h.ids)"), (VISIBLE, "true")))

# A saved player's sharing scope as the view shows it: one row per scope of the player with a counter (as
# SHARED_SYNC's) and the player's live timeline, with the rows of the ids stamped after each scope's version held
# (rows and change entries) that this scope sees through the view (SHARED_ROWS); or, read whole, every such row.
_SHARED_VIEW = """,
scopes AS MATERIALIZED ({scopes}
),
head AS MATERIALIZED (
    SELECT p.live, (p.live IS NULL OR p.live <> %(live)s OR EXISTS (SELECT 1 FROM scopes WHERE reload)) AS reload
    FROM (SELECT (SELECT p.timeline_id FROM player_state p WHERE p.user_id = %(user_id)s) AS live) p
),
h AS MATERIALIZED (
    SELECT head.*, CASE WHEN NOT head.reload THEN ARRAY(
                        SELECT u.id FROM scopes s
                        JOIN user_memories u ON u.user_id = %(user_id)s AND u.heroine_id = s.heroine
                                            AND u.scope_version > s.since
                      UNION
                        SELECT c.memory_id FROM scopes s
                        JOIN memory_changes c ON c.user_id = %(user_id)s AND c.heroine_id = s.heroine
                                             AND c.scope_version > s.since) END AS ids
    FROM head
)
SELECT s.heroine AS synced_heroine, s.version, s.epoch, h.live, h.reload, {columns}, m.terms, m.embedding
FROM h
LEFT JOIN scopes s ON true
LEFT JOIN LATERAL (SELECT * FROM {visible} m WHERE m.heroine_id = s.heroine AND {rows} OFFSET 0) m ON true
"""
SHARED_VIEW_SYNC, SHARED_VIEW_READ = (
    compile_statement(with_view(sql.SQL(_SHARED_VIEW).format(
        columns=MEMORY_COLUMNS, visible=visible(shared=True), rows=sql.SQL(rows), scopes=_PLAYER_SCOPES), shared=True))
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


@dataclass(frozen=True)
class SharedViewState:
    """A saved player's sharing scope as held: each of the player's scopes' versions, and the live timeline."""

    versions: Versions
    live: int


State = tuple[int, int] | Versions | ViewState | SharedViewState
"""What a held scope was synced to: its own (version, epoch), a sharing scope's ``Versions``, or a saved player's
``ViewState`` or ``SharedViewState``."""


@dataclass(frozen=True)
class Synced:
    """What a sync found: the state to hold next, the rows changed since the state asked about, and a reload.

    ``reload``: rows went that a sync cannot show (a delete), or the player saved or loaded, so the scope must be
    read whole again.
    """

    state: State
    rows: list[dict[str, Any]]
    reload: bool = False


async def sync(connect: Connect, scope: Scope, shared: bool, asked: State | None) -> Synced:
    """The scope's state, with its rows changed since ``asked`` (every row when None: a scope read whole).

    ``shared``: the scope held with the player's shared rows of other heroines. A saved player's scopes are read
    through the timeline view. A whole scope's rows are made a chunk at a time (store/compiled.py
    ``fetch_yielding``); a sync after a store brings one row.
    """
    params: dict[str, Any] = {"user_id": scope.user_id, "heroine_id": scope.heroine_id}
    if isinstance(asked, ViewState):
        return await _view_sync(connect, params, asked)
    if isinstance(asked, SharedViewState):
        return await _shared_view_sync(connect, params, asked)
    saved, found = await _plain_sync(connect, params, shared, asked)
    if not saved:
        return found
    if asked is not None:  # the view decides what a saved player sees: read whole again through it
        return Synced(asked, [], reload=True)
    return await (_shared_view_sync(connect, params, None) if shared else _view_sync(connect, params, None))


async def _plain_sync(
    connect: Connect, params: dict[str, Any], shared: bool, asked: State | None
) -> tuple[bool, Synced]:
    """``SYNC`` or ``SHARED_SYNC``: whether the player saved, and (if not) what the sync found."""
    if shared:
        held = cast(Versions, asked or ())
        found = await _fetch(connect, SHARED_SYNC, params | _held_params(held), asked is None)
        return found[0]["saved"], _shared_synced(held, found)
    version, epoch = cast(tuple[int, int], asked or (-1, -1))
    found = await _fetch(connect, SYNC, params | {"since": version, "epoch": epoch}, asked is None)
    head = found[0]
    return head["saved"], Synced((head["version"], head["epoch"]), [r for r in found if r["id"] is not None],
                                 head["reload"])


def _held_params(held: Versions) -> dict[str, Any]:
    """A sharing sync's held state as three arrays: heroines, versions, epochs."""
    return {"heroines": [h for h, _, _ in held], "since": [v for _, v, _ in held], "epochs": [e for _, _, e in held]}


def _stamped(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The view's rows, each stamped with its scope's version at this sync (the ``version`` beside it).

    The view's rows carry no stamp of their own, and each is as the view has it at that version.
    """
    for row in rows:
        row["scope_version"] = row["version"]
    return rows


async def _view_sync(connect: Connect, params: dict[str, Any], asked: ViewState | None) -> Synced:
    """A saved player's scope as the live view shows it, since ``asked`` (None: whole, ``VIEW_READ``)."""
    since = asked or ViewState(-1, -1, -1)
    params = params | view_params() | {"since": since.version, "epoch": since.epoch, "live": since.live}
    found = await _fetch(connect, VIEW_READ if asked is None else VIEW_SYNC, params, asked is None)
    head = found[0]
    rows = _stamped([r for r in found if r["id"] is not None])
    if asked is not None:
        return Synced(ViewState(head["version"], head["epoch"], head["live"]), rows, head["reload"])
    if head["live"] is None:  # no saved state any more (a forgotten player): the view's rows are the plain ones
        return Synced((head["version"], head["epoch"]), rows)
    return Synced(ViewState(head["version"], head["epoch"], head["live"]), rows)


async def _shared_view_sync(connect: Connect, params: dict[str, Any], asked: SharedViewState | None) -> Synced:
    """A saved player's sharing scope as the live view shows it, since ``asked`` (None: whole)."""
    held = asked.versions if asked is not None else ()
    params = params | view_params() | _held_params(held) | {"live": asked.live if asked is not None else -1}
    found = await _fetch(connect, SHARED_VIEW_READ if asked is None else SHARED_VIEW_SYNC, params, asked is None)
    head = found[0]
    plain = _shared_synced(held, found)
    rows = _stamped(plain.rows)
    if head["live"] is None:  # no saved state any more: read whole again (as a plain sharing scope)
        return Synced(plain.state, [], reload=True) if asked is not None else Synced(plain.state, rows)
    state = SharedViewState(cast(Versions, plain.state), head["live"])
    return Synced(state, rows, asked is not None and (plain.reload or head["reload"]))


async def _fetch(connect: Connect, statement: Compiled, params: dict[str, Any], whole: bool) -> list[dict[str, Any]]:
    async with connect() as conn:
        if whole:
            return await fetch_yielding(conn, statement, params)
        return await fetch_all(conn, statement, params)


def _shared_synced(held: Versions, found: list[dict[str, Any]]) -> Synced:
    """A sharing sync's rows as one state: a held scope gone from the player's counters is read whole again."""
    scopes = {r["synced_heroine"]: (r["version"], r["epoch"], r["reload"])
              for r in found if r["synced_heroine"] is not None}
    gone = any(h not in scopes for h, _, _ in held)
    state = tuple(sorted((h, v, e) for h, (v, e, _) in scopes.items()))
    return Synced(state, [r for r in found if r["id"] is not None], gone or any(r for _, _, r in scopes.values()))
