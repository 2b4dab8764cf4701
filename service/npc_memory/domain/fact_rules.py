"""What a fact must be to be stored, whoever wrote it: a StoreMemories request or a chat model's answer. Pure.

The API turns a broken rule into a field violation of the request; extraction turns it into a rejected fact's
reason. Both read the rules from here, so a fact the model proposes is held to exactly the game's rules.
"""

from __future__ import annotations

import re

from npc_memory.domain.model import USER_SUBJECT_ID, WORLD_SUBJECT_ID, Subject

MAX_SLOT = 128
MIN_IMPORTANCE, MAX_IMPORTANCE = 1, 10
HEROINE_ID = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
"""A heroine id (matched with fullmatch: a pattern ending in ``$`` would also accept a trailing newline)."""
RESERVED_SUBJECT_IDS = frozenset({USER_SUBJECT_ID, WORLD_SUBJECT_ID})
FIXED_SUBJECT_IDS = {Subject.USER: USER_SUBJECT_ID, Subject.WORLD: WORLD_SUBJECT_ID}
"""The only subject id a user or world fact may carry."""


def text_problem(value: str, max_chars: int, required: bool = True) -> str | None:
    """Why a text field cannot be stored (empty when required, too long, a NUL), or None."""
    if required and not value.strip():
        return "is required"
    if len(value) > max_chars:
        return f"is {len(value)} characters; the maximum is {max_chars}"
    if "\x00" in value:
        return "contains a NUL character"
    return None


def importance_ok(value: int) -> bool:
    """An importance within the scale."""
    return MIN_IMPORTANCE <= value <= MAX_IMPORTANCE


def slot_problem(value: str) -> str | None:
    """Why a slot key cannot be stored, or None (the empty slot is no slot)."""
    if problem := text_problem(value, MAX_SLOT, required=False):
        return problem
    if value != value.strip():
        return "must not start or end with whitespace"
    return None


def heroine_id_ok(value: str) -> bool:
    """A well-formed heroine id that is not a reserved subject id."""
    return value not in RESERVED_SUBJECT_IDS and HEROINE_ID.fullmatch(value) is not None
