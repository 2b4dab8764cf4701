"""The scope's latest stored dialogue turn before a time: the context of a turn stored alone (domain/dialogue.py).

And the one write a later turn makes to an earlier one: a question stored alone takes a vector over its answer.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg import sql

from npc_memory.domain.dialogue import MAX_TURN_CHARS, StoredTurn
from npc_memory.domain.model import Scope, Speaker, Vector
from npc_memory.domain.write_rules import content_key
from npc_memory.store.compiled import compile_statement
from npc_memory.store.direct import read_direct
from npc_memory.store.pipelined import Pipeline
from npc_memory.store.pool import Database
from npc_memory.store.view import PICKED, with_view
from npc_memory.store.writes import scope_params

# Whether another speaker said a short line at row m's moment (its session stored line by line at one date).
OTHER_VOICE = sql.SQL("""EXISTS (SELECT 1 FROM {visible} o
    WHERE o.valid_at = m.valid_at AND o.speaker <> m.speaker AND o.tier <> 'gist'
      AND o.invalid_at IS NULL AND char_length(o.content) <= %(max_chars)s)""").format(visible=PICKED)

# The newest valid short row said in [since, before] (a row said at the same moment was stored earlier: the
# turn before it, e.g. every turn of a session dated with the session's date); any tier but gist, since a
# dialogue stored without tier source is knowledge (domain/dialogue.py). The scope index (user_id,
# heroine_id, valid_at DESC) orders it. Closed rows are not context: an invalidated line was taken back.
# With it, the row said before it within the window (the same rule, one more index probe): its own context,
# which a question answered by the new turn is embedded over again (domain/dialogue.py ``answered_text``);
# and whether another speaker said a line at its moment (a session stored line by line at its date), so the
# same speaker's next line there is a turn too (``joins_dialogue``).
#
# The newest row is found first, in a subquery of its own (its LIMIT keeps the rest out): with the lateral read and
# the other voice's probe in the same query level, the generic plan made both for every row of the window and sorted
# after (18.6 ms for a player's 155 lines in the last half hour, growing with the lines; EXPLAIN ANALYZE).
PREVIOUS_TURN = with_view(sql.SQL("""
SELECT m.id, m.content, m.valid_at, m.speaker, p.content AS previous, p.speaker AS previous_speaker,
       {other_voice} AS moment_voices
FROM (
    SELECT m.id, m.content, m.valid_at, m.speaker, m.created_at FROM {visible} m
    WHERE m.tier <> 'gist' AND m.invalid_at IS NULL AND char_length(m.content) <= %(max_chars)s
      AND m.valid_at <= %(before)s AND m.valid_at >= %(since)s
    ORDER BY m.valid_at DESC, m.created_at DESC
    LIMIT 1) m
LEFT JOIN LATERAL (
    SELECT p.content, p.speaker FROM {visible} p
    WHERE p.tier <> 'gist' AND p.invalid_at IS NULL AND char_length(p.content) <= %(max_chars)s
      AND p.valid_at >= m.valid_at - %(window)s::interval
      AND (p.valid_at < m.valid_at OR (p.valid_at = m.valid_at AND p.created_at < m.created_at))
    ORDER BY p.valid_at DESC, p.created_at DESC
    LIMIT 1) p ON true
""").format(visible=PICKED, other_voice=OTHER_VOICE))

# Whether the speaker said this line before in a dialogue: a valid row of the same text (the content_key index)
# at a moment that holds another speaker's line. A session's first line stored alone (no row said before it
# within the window) that repeats such a line is a turn, not a restated fact (domain/dialogue.py).
SAID_IN_DIALOGUE = with_view(sql.SQL("""
SELECT EXISTS (
    SELECT 1 FROM {visible} m
    WHERE md5(m.content_key) = md5(%(content_key)s) AND m.content_key = %(content_key)s
      AND m.speaker = %(speaker)s AND m.tier <> 'gist' AND m.invalid_at IS NULL
      AND {other_voice}
) AS said
""").format(visible=PICKED, other_voice=OTHER_VOICE))

# A question's vector taken again over its answer; only while the row is valid (a taken-back line stays as it was).
SET_TURN_VECTOR = """
UPDATE user_memories SET embedding = %(embedding)s, embedding_model = %(model)s, updated_at = statement_timestamp()
WHERE user_id = %(user_id)s AND heroine_id = %(heroine_id)s AND id = %(id)s AND invalid_at IS NULL
"""


# Both run before the model (a turn is embedded over the line before it), so every microsecond is a lone store's:
# they are 7-10 KB with the view, over psycopg's 4 KB parse cache, so they go compiled through libpq (store/direct.py).
_PREVIOUS_TURN, _SAID_IN_DIALOGUE = map(compile_statement, (PREVIOUS_TURN, SAID_IN_DIALOGUE))


async def previous_turn(db: Database, scope: Scope, before: datetime, since: datetime,
                        beside: Callable[[], object] | None = None) -> StoredTurn | None:
    """The scope's latest valid short row (not a gist) said in ``[since, before]``, if any, with its predecessor.

    ``beside``: the caller's work, run while the database answers (store/direct.py).
    """
    rows = await read_direct(db, _PREVIOUS_TURN, scope_params(scope) | {
        "before": before, "since": since, "max_chars": MAX_TURN_CHARS, "window": before - since}, beside)
    return _stored(rows[0]) if rows else None


async def said_in_dialogue(db: Database, scope: Scope, content: str, speaker: Speaker,
                           beside: Callable[[], object] | None = None) -> bool:
    """Whether ``speaker`` said ``content`` (the same normalised text) before as a line of a dialogue."""
    rows = await read_direct(db, _SAID_IN_DIALOGUE, scope_params(scope) | {
        "content_key": content_key(content), "speaker": speaker.value, "max_chars": MAX_TURN_CHARS}, beside)
    return bool(rows and rows[0]["said"])


def _stored(row: dict[str, Any]) -> StoredTurn:
    previous = None if row["previous"] is None else (row["previous"], Speaker(row["previous_speaker"]))
    return StoredTurn(row["content"], row["valid_at"], Speaker(row["speaker"]), row["id"], previous,
                      row["moment_voices"])


_SET_TURN_VECTOR = compile_statement(sql.SQL(SET_TURN_VECTOR))


def queue_turn_vector(pipe: Pipeline, scope: Scope, memory_id: UUID, vector: Vector, model: str) -> None:
    """Give a stored turn a new vector, queued in the caller's write transaction."""
    pipe.queue(_SET_TURN_VECTOR, {"user_id": scope.user_id, "heroine_id": scope.heroine_id, "id": memory_id,
                                  "embedding": vector, "model": model})

