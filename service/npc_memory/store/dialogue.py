"""A stated dialogue's stored turns, found by their place (domain/dialogue.py), and a turn's vector made again."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

from psycopg import sql

from npc_memory.domain.dialogue import Line
from npc_memory.domain.model import Scope, Speaker, Vector
from npc_memory.store.compiled import compile_statement
from npc_memory.store.pipelined import Pipeline
from npc_memory.store.pool import Database
from npc_memory.store.view import PICKED, with_view
from npc_memory.store.writes import scope_params


@dataclass(frozen=True)
class StoredTurn:
    """A turn of a dialogue as stored: its memory, its position and the line."""

    id: UUID
    position: int
    line: Line


# The turns the view sees at positions [first, last] of one dialogue of the scope (the dialogue index, migration
# 0020), closed ones too: a resend of a taken-back line is still that line.
TURNS = with_view(sql.SQL("""
SELECT m.id, m.dialogue_position, m.speaker, m.content, m.speaker_name, m.valid_at FROM {visible} m
WHERE m.dialogue_id = %(dialogue_id)s AND m.dialogue_position BETWEEN %(first)s AND %(last)s
ORDER BY m.dialogue_position, m.created_at
""").format(visible=PICKED))


async def stored_turns(db: Database, scope: Scope, dialogue_id: str, first: int, last: int) -> list[StoredTurn]:
    """The scope's stored turns of ``dialogue_id`` at positions ``first`` to ``last``, one per position, in order."""
    async with db.connection() as conn:
        cur = await conn.execute(TURNS, scope_params(scope) | {"dialogue_id": dialogue_id, "first": first,
                                                                "last": last})
        rows = await cur.fetchall()
    by_position: dict[int, StoredTurn] = {}
    for row in rows:
        by_position.setdefault(row["dialogue_position"], _turn(row))
    return [by_position[p] for p in sorted(by_position)]


def _turn(row: dict[str, Any]) -> StoredTurn:
    return StoredTurn(row["id"], row["dialogue_position"],
                      Line(Speaker(row["speaker"]), row["content"], row["speaker_name"] or "", row["valid_at"]))


# A turn's vector taken again over new context (a question whose answer a later request brought).
SET_TURN_VECTOR = """
UPDATE user_memories SET embedding = %(embedding)s, embedding_model = %(model)s, updated_at = statement_timestamp()
WHERE user_id = %(user_id)s AND heroine_id = %(heroine_id)s AND id = %(id)s
"""
_SET_TURN_VECTOR = compile_statement(sql.SQL(SET_TURN_VECTOR))


def queue_turn_vector(pipe: Pipeline, scope: Scope, memory_id: UUID, vector: Vector, model: str) -> None:
    """Give a stored turn a new vector, queued in the caller's write transaction."""
    pipe.queue(_SET_TURN_VECTOR, {"user_id": scope.user_id, "heroine_id": scope.heroine_id, "id": memory_id,
                                  "embedding": vector, "model": model})
