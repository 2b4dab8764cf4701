"""Export and import of players: each kind's rows as JSON lines out, COPY in (domain/portable.py is the format).

The export reads in one REPEATABLE READ snapshot, so a player written meanwhile comes out as of one moment; the
lines are made by PostgreSQL itself (json_build_object in UTC), so vectors and timestamps are written exactly as
stored. The import runs in the caller's one transaction, under each player's exclusive lock.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from npc_memory.domain.portable import KINDS, Field, FieldType, Header, Kind, Record
from npc_memory.errors import FailedPreconditionError, FieldViolation, InvalidArgumentError
from npc_memory.store.changes import LOCK_PLAYER_ALONE
from npc_memory.store.lifecycle import FORGET, FORGET_ALSO
from npc_memory.store.pool import Connection, Database
from npc_memory.store.settings import GET, MODEL_KEY, TERMS_KEY

SNAPSHOT = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"
UTC = "SET LOCAL TIME ZONE 'UTC'"
_TABLES = list(dict.fromkeys(k.table for k in KINDS))


def _value(field: Field) -> sql.Composable:
    column = sql.Identifier(field.column or field.name)
    # pgvector has no JSON cast: its text form ('[0.1,0.2]', float4's shortest exact digits) is a JSON array.
    return sql.SQL("{}::text::json").format(column) if field.type is FieldType.VECTOR else column


def _export(kind: Kind) -> sql.Composed:
    pairs = sql.SQL(", ").join(sql.SQL("{}, {}").format(sql.Literal(field.name), _value(field))
                               for field in kind.fields)
    return sql.SQL("SELECT json_build_object('kind', {kind}, {pairs})::text AS line FROM {table} "
                   "WHERE user_id = %(user_id)s ORDER BY {order}").format(
        kind=sql.Literal(kind.name), pairs=pairs, table=sql.Identifier(kind.table), order=sql.SQL(kind.order))


EXPORT = {kind.name: _export(kind) for kind in KINDS}
"""Per kind: one player's rows, each as its record's JSON line."""

PLAYERS = sql.SQL("SELECT user_id FROM ({tables}) p ORDER BY user_id").format(tables=sql.SQL(" UNION ").join(
    sql.SQL("SELECT user_id FROM {}").format(sql.Identifier(t)) for t in _TABLES))
"""Every player with a row in any exported table."""

HELD = sql.SQL("SELECT DISTINCT user_id FROM ({tables}) p ORDER BY user_id").format(tables=sql.SQL(" UNION ALL ").join(
    sql.SQL("(SELECT user_id FROM {} WHERE user_id = ANY(%(ids)s) LIMIT 1)").format(sql.Identifier(t))
    for t in _TABLES))
"""Which of the named players the database already holds rows of."""

COPY = {kind.name: sql.SQL("COPY {table} ({columns}) FROM STDIN").format(
    table=sql.Identifier(kind.table), columns=sql.SQL(", ").join(map(sql.Identifier, kind.columns())))
    for kind in KINDS}
"""Per kind: the load of its rows, every column given (COPY keeps a GENERATED ALWAYS identity's given value)."""

# memory_changes.seq orders a memory's entries (store/view.py): entries written after an import must come after
# the imported ones, so the sequence moves past the largest seq loaded (never back).
SEQ_PAST_LOADED = """
SELECT setval(s.name, m.seq)
FROM (SELECT pg_get_serial_sequence('memory_changes', 'seq') AS name) s,
     (SELECT max(seq) AS seq FROM memory_changes) m
WHERE m.seq > COALESCE(pg_sequence_last_value(s.name::regclass), 0)
"""

CLAIM_SETTING = "INSERT INTO service_settings (key, value) VALUES (%(key)s, %(value)s) ON CONFLICT (key) DO NOTHING"

_COPY_LINE = re.compile(r"COPY \S+, line (\d+)(?:, column (\w+))?")


class Snapshot:
    """An export's read: one transaction's consistent view of every player."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    async def header(self) -> Header:
        """What the database records about its vectors and keyword terms."""
        values = []
        for key in (MODEL_KEY, TERMS_KEY):
            cur = await self._conn.execute(GET, {"key": key})
            row = await cur.fetchone()
            values.append(None if row is None else str(row["value"]))
        return Header(values[0], values[1])

    async def players(self) -> list[str]:
        """Every player's id, in order."""
        cur = await self._conn.execute(PLAYERS)
        return [str(row["user_id"]) for row in await cur.fetchall()]

    async def lines(self, user_id: str) -> AsyncIterator[str]:
        """The player's records, kind by kind in the load order, streamed."""
        for kind in KINDS:
            async for row in self._conn.cursor().stream(EXPORT[kind.name], {"user_id": user_id}):
                yield str(row["line"])


@asynccontextmanager
async def snapshot(db: Database) -> AsyncIterator[Snapshot]:
    """A read-only snapshot of the database for an export."""
    async with db.transaction() as conn:
        await conn.execute(SNAPSHOT)
        await conn.execute(UTC)
        yield Snapshot(conn)


async def check_settings(conn: Connection, header: Header) -> None:
    """Refuse memories whose vectors or terms another model or other text options made; record them when unset."""
    for key, value in ((MODEL_KEY, header.embedding_model), (TERMS_KEY, header.text_terms)):
        if value is None:
            continue
        cur = await conn.execute(GET, {"key": key})
        row = await cur.fetchone()
        if row is None:
            await conn.execute(CLAIM_SETTING, {"key": key, "value": value})
        elif row["value"] != value:
            raise InvalidArgumentError([FieldViolation(
                f"line 1: {key}", f"the file's rows were made with {value!r}, but this database holds "
                f"{row['value']!r}; import into a database of the same {key.replace('_', ' ')} (or re-make the "
                "rows there after: `npc-memory reembed` / `npc-memory retokenize`)")])


async def load(conn: Connection, players: Sequence[str], records: Mapping[str, list[Record]], replace: bool) -> None:
    """Write the players' records, after erasing what the database held of them (``replace``) or refusing to."""
    for user_id in sorted(players):
        await conn.execute(LOCK_PLAYER_ALONE, {"user_id": user_id})
    cur = await conn.execute(HELD, {"ids": list(players)})
    held = [str(row["user_id"]) for row in await cur.fetchall()]
    if held and not replace:
        raise FailedPreconditionError(
            f"this database already holds player {held[0]!r}"
            f"{f' (and {len(held) - 1} more)' if len(held) > 1 else ''}; import never merges a player: "
            "pass --replace to erase what it holds of the file's players first")
    for user_id in held:
        for statement in (FORGET, *FORGET_ALSO):
            await conn.execute(statement, {"user_id": user_id})
    for kind in KINDS:
        rows = records.get(kind.name, [])
        if rows:
            await _copy(conn, kind, rows)


def _row(kind: Kind, record: Record) -> tuple[Any, ...]:
    return tuple(Jsonb(v) if f.type is FieldType.JSON and v is not None else v
                 for f, v in zip(kind.fields, record.values, strict=True))


async def _copy(conn: Connection, kind: Kind, rows: Sequence[Record]) -> None:
    """COPY one kind's rows; a row the database refuses is named by its file line."""
    try:
        async with conn.cursor().copy(COPY[kind.name]) as copy:
            for record in rows:
                await copy.write_row(_row(kind, record))
    except (psycopg.errors.IntegrityError, psycopg.errors.DataError) as exc:
        raise _refused(kind, rows, exc) from None


def _refused(kind: Kind, rows: Sequence[Record], exc: psycopg.Error) -> InvalidArgumentError:
    diag = exc.diag
    found = _COPY_LINE.search(diag.context or "")
    where = "(file)"
    column = diag.column_name or (found.group(2) if found else None) or _checked_column(kind, diag.constraint_name)
    field = _field_of(kind, column) if column else diag.constraint_name or ""
    if found is not None and 0 < int(found.group(1)) <= len(rows):
        where = f"line {rows[int(found.group(1)) - 1].line}"
    return InvalidArgumentError([FieldViolation(
        f"{where}: {kind.name}{'.' + field if field else ''}",
        f"refused by the database: {diag.message_primary or exc}")])


def _checked_column(kind: Kind, constraint: str | None) -> str | None:
    """The column a one-column CHECK constraint is about: PostgreSQL names it ``<table>_<column>_check``."""
    column = (constraint or "").removeprefix(f"{kind.table}_").removesuffix("_check")
    return column if column in kind.columns() else None


def _field_of(kind: Kind, column: str) -> str:
    return next((f.name for f in kind.fields if (f.column or f.name) == column), column)


async def after_load(conn: Connection) -> None:
    """What the loaded rows need of the database's counters."""
    await conn.execute(SEQ_PAST_LOADED)

