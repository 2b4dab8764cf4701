"""Scopes held in memory and ranked here (search/rank.py), kept exact by one round trip per search.

The search statement reads and scores every row of the scope on each request (the search is exact, so no index
can skip rows), which is most of a caller-vector search's time. A scope the server has seen is kept as
columns instead, and each search sends one small statement (store/scope_sync.py) that returns the scope's version
(migration 0013: every insert or update stamps the next version of its scope on the row, in commit order) and
the rows stamped after the version held: none when nothing changed, the few a store wrote, or every row on the
first search, after a delete, or if the counter went back. The ranking then runs on rows that are exactly the
table's at that statement's snapshot, so a store acknowledged before a search begins is in its results, and
other server processes' writes are seen the same way: nothing is trusted that the database did not just confirm.

Only searches of the live view are ranked here (``scope_rank.servable``: no past view, no links to follow, the
BM25 keyword side, a query vector). A player who saved (``player_state`` has a row) sees the rows as the timeline
view shows them (closes and edits are change entries, a load branches the timeline): such a scope is held as the
view shows it, synced against a version that counts change entries too, and the player's live timeline. A sharing
search (``include_shared``) is ranked from the scope held apart, with the player's shared rows of other heroines,
synced against each of the player's scopes (and, for a player who saved, through the view as well).
The scopes held are bounded by rows (``max_rows``), least recently searched dropped first.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from npc_memory.domain import dialogue
from npc_memory.domain.model import Memory, Scope, ScoredMemory, SearchQuery
from npc_memory.search.rank import RankedRow, rank, servable
from npc_memory.search.rows import ScopeRows
from npc_memory.store.keyword import ResolvedKeywordBackend
from npc_memory.store.pool import Database
from npc_memory.store.scope_sync import State, Synced, sync

log = logging.getLogger(__name__)

SYNC_ATTEMPTS = 3
"""Syncs tried when another search of the scope changed what is held meanwhile, before the statement runs instead."""


def _built(scope: Scope, found: list[dict[str, Any]]) -> ScopeRows | None:
    """A scope's rows as columns; None if its vectors are of two sizes (a re-embedding half done)."""
    rows = ScopeRows(scope)
    if not rows.fits(found):
        return None
    rows.apply(found)
    return rows


def _content(hit: tuple[Memory, RankedRow]) -> str:
    return hit[0].content


Key = tuple[Scope, bool]
"""A held scope: its own rows (False), or with the player's shared rows of other heroines (True)."""


@dataclass
class _Held:
    """A scope as last synced: its state (store/scope_sync.py), and rows (None: the statement serves it)."""

    state: State
    rows: ScopeRows | None
    counted: int = 0
    """Its weight against ``max_rows`` when last kept: its rows, and one for the entry itself (so the entries of
    scopes the statement serves are bounded too)."""


class ScopeCache:
    """The scopes this process ranks in memory, at most ``max_rows`` rows in all."""

    def __init__(self, max_rows: int) -> None:
        self.max_rows = max_rows
        self._held: OrderedDict[Key, _Held] = OrderedDict()
        self._loading: dict[Key, asyncio.Task[None]] = {}
        self._rows = 0
        self._weight = 0

    @property
    def rows(self) -> int:
        """Rows held now."""
        return self._rows

    def forget(self, user_id: str) -> None:
        """Drop every held scope of a player (ForgetPlayer: nothing of theirs stays in this process)."""
        for key in [k for k in self._held if k[0].user_id == user_id]:
            self._drop(key)
        for key, task in list(self._loading.items()):
            if key[0].user_id == user_id:
                task.cancel()

    def takes(self, query: SearchQuery, backend: ResolvedKeywordBackend) -> bool:
        """Whether a search of this shape may be ranked here (it also needs a query vector: ``ranked``)."""
        return self.max_rows > 0 and backend == "bm25" and servable(query)

    async def search(
        self, db: Database, query: SearchQuery, terms: Sequence[str], per_side: int,
        synced: Awaitable[ScopeRows | None] | None = None, distinct: int = 0,
    ) -> list[ScoredMemory] | None:
        """The ranked hits, as the search statement would return them now; None when the statement must run.

        ``synced``: this scope's ``current`` already under way (a text search sends it while the model runs). With
        a vector known, the held rows' products with it are made while the sync is in the database: they were a
        tenth of a caller-vector search's own time (docs/decisions/private-driver.md).
        ``distinct``: the first this many hits whose texts differ (``dialogue.distinct_turns``), or 0: every hit.
        """
        if synced is None:
            synced = asyncio.ensure_future(self.current(db, query.scope, query.include_shared))
        if query.embedding is not None and isinstance(synced, asyncio.Future) and not synced.done():
            try:
                await asyncio.sleep(0)  # the sync's task sends its statement and waits on the socket
            except asyncio.CancelledError:
                synced.cancel()
                raise
            self._product_meanwhile(query)
        rows = await synced
        return None if rows is None else self.ranked(rows, query, terms, per_side, distinct)

    def _product_meanwhile(self, query: SearchQuery) -> None:
        """The held rows' products with the query's vector, made while the database answers the sync.

        ``ScopeRows.product`` keeps them for the ranking if the sync changes no row (the common case).
        """
        held = self._held.get((query.scope, query.include_shared))
        vector = query.embedding
        if held is not None and held.rows is not None and vector is not None and vector.size == held.rows.dimensions:
            held.rows.product(vector)

    def ranked(
        self, rows: ScopeRows, query: SearchQuery, terms: Sequence[str], per_side: int, distinct: int = 0,
    ) -> list[ScoredMemory] | None:
        """The query's hits among rows ``current`` returned; None when they cannot answer it (no or another vector).

        With ``distinct``, repeated texts are dropped before the hits are made: the search asks for twice the hits it
        answers with when it collapses repeats, and making each hit's two frozen objects was most of the ranking's
        Python (py-spy).
        """
        if rows.count == 0:
            return []
        if query.embedding is None or query.embedding.size != rows.dimensions:
            return None
        found = [(rows.memory(r.row), r)
                 for r in rank(rows.columns(), query, terms, per_side, rows.memo, rows.product(query.embedding))]
        if distinct:
            found = dialogue.distinct_contents(found, _content, distinct)
        return [ScoredMemory(memory, r.scores, r.cosine) for memory, r in found]

    async def current(self, db: Database, scope: Scope, shared: bool = False) -> ScopeRows | None:
        """The scope's held rows, brought to the table's state by one sync; None when the statement must serve it.

        It needs nothing of the query but its scope, so a text search sends it while the model runs. A scope not
        held yet is read in the background (the statement answers meanwhile), so no search waits for a whole
        scope. A sync's rows are applied only to the state it was asked against: if another search of the scope
        synced while this one waited, this one syncs again from the newer state. ``shared``: the scope with the
        player's shared rows of other heroines (an ``include_shared`` search), held apart from its own rows.
        """
        key = (scope, shared)
        for _ in range(SYNC_ATTEMPTS):
            held = self._held.get(key)
            if held is None:
                self._start_loading(db, key)
                return None
            if held.rows is None:
                self._held.move_to_end(key)
                return None
            asked = held.state
            found = await sync(db.kept_connection, scope, shared, asked)
            now = self._held.get(key)
            if now is not held or now.state != asked:
                continue
            return self._synced(db, key, held, found)
        return None

    async def loaded(self, scope: Scope, shared: bool = False) -> None:
        """Wait for a background read of ``scope`` under way, if any (for tests and benchmarks)."""
        task = self._loading.get((scope, shared))
        if task is not None:
            await asyncio.wait([task])

    async def close(self) -> None:
        """Stop the background reads under way."""
        tasks = list(self._loading.values())
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)

    def _start_loading(self, db: Database, key: Key) -> None:
        if key in self._loading:
            return
        task = asyncio.ensure_future(self._load(db, key))
        self._loading[key] = task
        task.add_done_callback(partial(self._loaded, key))

    async def _load(self, db: Database, key: Key) -> None:
        found = await sync(db.connection, key[0], key[1], None)
        # Columns built in a thread: building them is enough Python to hold up every other request on the loop.
        rows = await asyncio.to_thread(_built, key[0], found.rows)
        if rows is None:
            return  # vectors of two sizes (a re-embedding half done): read again on a later search
        if key not in self._held:  # else a newer state was kept meanwhile (by a sync of a search)
            self._keep(key, _Held(found.state, rows))

    def _loaded(self, key: Key, task: asyncio.Task[None]) -> None:
        self._loading.pop(key, None)
        if not task.cancelled() and task.exception() is not None:
            # The search that asked was answered by the statement; the next one tries again.
            log.warning("reading a scope to hold failed", exc_info=task.exception())

    def _synced(self, db: Database, key: Key, held: _Held, found: Synced) -> ScopeRows | None:
        """The held rows after a sync's changes; None when the statement must serve this search.

        A scope that must be read whole again (a delete, a new epoch, a save, a load) is dropped and read in the
        background, like a scope seen for the first time.
        """
        rows = held.rows
        if found.reload or rows is None or not rows.fits(found.rows):  # not fitting: vectors of two sizes
            self._drop(key)
            self._start_loading(db, key)
            return None
        rows.apply(found.rows)
        held.state = found.state
        return self._keep(key, held).rows

    def _drop(self, key: Key) -> None:
        old = self._held.pop(key, None)
        if old is not None:
            self._weight -= old.counted
            self._rows -= old.counted - 1

    def _keep(self, key: Key, held: _Held) -> _Held:
        """Hold ``held`` for ``key`` as the most recently used, dropping the least recent past ``max_rows``."""
        self._drop(key)
        size = held.rows.count if held.rows is not None else 0
        if size >= self.max_rows:
            held = _Held(held.state, None)
            size = 0
        held.counted = size + 1
        self._held[key] = held
        self._weight += held.counted
        self._rows += size
        while self._weight > self.max_rows:
            oldest = next(iter(self._held))
            self._drop(oldest)
        return held
