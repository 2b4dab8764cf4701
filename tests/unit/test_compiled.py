"""A statement compiled to ``$n`` placeholders keeps each name's number and its literal percent signs."""

from __future__ import annotations

from npc_memory.store.compiled import compile_statement
from psycopg import sql


def test_names_are_numbered_in_first_use_order_and_reused() -> None:
    """A name used twice keeps one number; ``%%`` becomes ``%``; identifiers are rendered once."""
    statement = sql.SQL("SELECT {col} FROM t WHERE a = %(a)s AND b = %(b)s AND c = %(a)s AND d LIKE 'x%%'").format(
        col=sql.Identifier("m", "id"))
    compiled = compile_statement(statement)
    assert compiled.query == b"""SELECT "m"."id" FROM t WHERE a = $1 AND b = $2 AND c = $1 AND d LIKE 'x%'"""
    assert compiled.names == ("a", "b")
    assert compiled.args({"b": 2, "a": 1, "unused": 3}) == [1, 2]
