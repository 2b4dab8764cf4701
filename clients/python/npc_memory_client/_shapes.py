"""Checks on the shape of what a caller passes, before anything is sent.

A ``str`` is itself a sequence of one-character strings, so a bare text given where a list was meant would
otherwise be stored one character at a time; and ``**options`` would otherwise drop a misspelt keyword silently.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any


def one_or_many(value: object, single: tuple[type, ...], what: str, example: str) -> list[Any]:
    """``value`` as a list: one item of a ``single`` type is a list of one; anything else must hold only such items.

    ``what`` names the argument and ``example`` shows what to pass, for the TypeError a wrong shape gets.
    """
    if isinstance(value, single):
        return [value]
    if isinstance(value, bytes | bytearray | Mapping) or not isinstance(value, Iterable):
        raise TypeError(f"{what}: expected {example}, got {type(value).__name__}")
    items = list(value)
    for i, item in enumerate(items):
        if not isinstance(item, single):
            raise TypeError(f"{what}[{i}]: expected {example}, got {type(item).__name__}")
    return items


def not_text(value: Iterable[Any], what: str, example: str) -> list[Any]:
    """``value`` as a list, refusing a bare ``str`` (whose items would be its characters)."""
    if isinstance(value, str | bytes | bytearray):
        raise TypeError(f"{what}: expected {example}, got a bare {type(value).__name__} {value!r}")
    return list(value)


def known_options(given: Mapping[str, Any], allowed: type, method: str) -> None:
    """Refuse a keyword that ``allowed`` (a TypedDict) does not declare, as Python does for a misspelt argument."""
    keys: frozenset[str] = getattr(allowed, "__required_keys__", frozenset()) | getattr(
        allowed, "__optional_keys__", frozenset())
    unknown = sorted(set(given) - keys)
    if not unknown:
        return
    close = difflib.get_close_matches(unknown[0], keys, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise TypeError(f"{method}() got an unexpected keyword argument {unknown[0]!r}{hint}; "
                    f"its options are {', '.join(sorted(keys))}")
