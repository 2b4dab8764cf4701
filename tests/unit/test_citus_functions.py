"""The store's statements give Citus no function it refuses on a distributed table (checked in the text)."""

from __future__ import annotations

import importlib
import pkgutil
import re

from npc_memory import store
from psycopg import sql

# Citus refuses a volatile function in an UPDATE of a distributed table, and anything but an immutable one in the
# DO UPDATE SET of an upsert; now() (stable) it evaluates on the coordinator in an UPDATE, not in DO UPDATE SET.
VOLATILE = re.compile(r"\b(clock_timestamp|random|nextval|gen_random_uuid|timeofday)\s*\(", re.IGNORECASE)
ANY_TIME = re.compile(r"\b(now|clock_timestamp|statement_timestamp|transaction_timestamp|nextval)\s*\(", re.IGNORECASE)
UPDATE_SET = re.compile(r"\bUPDATE\s+\w+(?:\s+\w+)?\s+SET\b(.*?)(?:\bWHERE\b|\bFROM\b|\bRETURNING\b|$)",
                        re.IGNORECASE | re.DOTALL)
DO_UPDATE_SET = re.compile(r"\bDO\s+UPDATE\s+SET\b(.*?)(?:\bWHERE\b|\bRETURNING\b|$)", re.IGNORECASE | re.DOTALL)


def _statements() -> dict[str, str]:
    """Every SQL constant of the store package (module.NAME), as text."""
    found: dict[str, str] = {}
    for info in pkgutil.walk_packages(store.__path__, store.__name__ + "."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            text = value.as_string(None) if isinstance(value, sql.Composable) else value
            if name.isupper() and isinstance(text, str) and re.search(r"\b(UPDATE|INSERT)\b", text):
                found[f"{info.name.removeprefix(store.__name__ + '.')}.{name}"] = text
    return found


def test_no_update_or_upsert_gives_citus_a_function_it_refuses() -> None:
    """No volatile function in an UPDATE's SET, no time or sequence function in an upsert's DO UPDATE SET."""
    statements = _statements()
    assert len(statements) > 10  # the walk found the store's writes
    refused = []
    for name, text in statements.items():
        upserts = DO_UPDATE_SET.findall(text)
        refused += [f"{name}: DO UPDATE SET {s.strip()[:60]}" for s in upserts if ANY_TIME.search(s)]
        without_upserts = DO_UPDATE_SET.sub("", text)
        refused += [f"{name}: UPDATE SET {s.strip()[:60]}" for s in UPDATE_SET.findall(without_upserts)
                    if VOLATILE.search(s)]
    assert refused == []


def test_the_check_finds_what_citus_refuses() -> None:
    """The patterns catch the statements Citus refused before (so the check above can fail)."""
    assert VOLATILE.search(UPDATE_SET.findall("UPDATE t SET a = 1, b = clock_timestamp() WHERE x")[0])
    upsert = "INSERT INTO t VALUES (1) ON CONFLICT (k) DO UPDATE SET at = now()"
    assert ANY_TIME.search(DO_UPDATE_SET.findall(upsert)[0])
