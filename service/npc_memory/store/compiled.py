"""A long statement turned once into PostgreSQL's ``$n`` form, so a call only orders its parameters.

psycopg parses a statement's ``%(name)s`` placeholders on every execute unless the statement is under 4 KB (its
cache's limit); the search statements are 10-20 KB, and that parse was a visible share of the server's CPU under
a caller-vector search load (py-spy). A compiled statement is run through a raw
cursor, which sends it as is (prepared, binary, like before).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import psycopg
from psycopg import AsyncConnection, AsyncRawCursor, sql
from psycopg.types.array import ListBinaryDumper

from npc_memory.store.pool import Database

Row = TypeVar("Row")
_PLACEHOLDER = re.compile(rb"%\((\w+)\)([sb])|%%")


class BinaryList(list[Any]):
    """A list a raw cursor sends in binary, as ``%(name)b`` asks.

    A raw cursor's own choice dumps a list of vectors as text: a 32-fact store with caller vectors then spends
    much of its time printing and parsing its 12,000 floats.
    """


psycopg.adapters.register_dumper(BinaryList, ListBinaryDumper)


@dataclass(frozen=True)
class Compiled:
    """A statement with ``$n`` placeholders and the parameter name each number stands for."""

    query: bytes
    names: tuple[str, ...]
    binary: frozenset[str] = frozenset()
    """The names written ``%(name)b``: their list values are sent in binary."""

    def args(self, params: Mapping[str, Any]) -> list[Any]:
        """The parameters in placeholder order."""
        return [BinaryList(params[n]) if n in self.binary and isinstance(params[n], list) else params[n]
                for n in self.names]


def compile_statement(statement: sql.Composable) -> Compiled:
    """``statement``'s named placeholders as ``$1``, ``$2``...; a name used twice keeps its number.

    A ``%(name)b`` placeholder becomes a plain ``$n`` too, its name kept in ``binary``.
    """
    names: dict[str, int] = {}
    binary: set[str] = set()

    def number(match: re.Match[bytes]) -> bytes:
        if match.group(0) == b"%%":
            return b"%"
        name = match.group(1).decode()
        if match.group(2) == b"b":
            binary.add(name)
        if name not in names:
            names[name] = len(names) + 1
        return b"$%d" % names[name]

    query = _PLACEHOLDER.sub(number, statement.as_bytes(None))
    return Compiled(query, tuple(names), frozenset(binary))


async def execute(
    conn: AsyncConnection[Row], statement: Compiled, params: Mapping[str, Any], binary: bool = False
) -> AsyncRawCursor[Row]:
    """Send a compiled statement as ``conn.execute`` would (text results unless ``binary``); its cursor, unfetched."""
    cur = AsyncRawCursor(conn)
    await cur.execute(statement.query, statement.args(params), binary=binary)
    return cur


async def fetch_all(conn: AsyncConnection[Any], statement: Compiled, params: Mapping[str, Any]) -> list[Any]:
    """Run a compiled statement (prepared, binary results) and fetch every row, as the connection makes rows."""
    async with AsyncRawCursor(conn) as cur:
        await cur.execute(statement.query, statement.args(params), prepare=True, binary=True)
        return await cur.fetchall()


async def read(db: Database, statement: Compiled, params: Mapping[str, Any]) -> list[Any]:
    """``fetch_all`` on the pool's kept connection, or a pooled one while it is busy.

    The reads are small statements (a memory, a page, a history, a profile), and the pool's bookkeeping cost
    more than they do (store/pool.py ``kept_connection``).
    """
    async with db.kept_connection() as conn:
        return await fetch_all(conn, statement, params)


async def fetch_yielding(
    conn: AsyncConnection[Any], statement: Compiled, params: Mapping[str, Any], chunk: int = 256
) -> list[Any]:
    """``fetch_all``, making rows ``chunk`` at a time and letting the event loop run between chunks.

    For reads of thousands of rows: making them (vectors, json, uuids) is enough Python that in one piece it would
    hold up every other request of the process.
    """
    rows: list[Any] = []
    async with AsyncRawCursor(conn) as cur:
        await cur.execute(statement.query, statement.args(params), prepare=True, binary=True)
        while batch := await cur.fetchmany(chunk):
            rows += batch
            await asyncio.sleep(0)
    return rows
