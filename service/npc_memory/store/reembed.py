"""Re-embedding every stored row with the configured model, page by page (``npc-memory reembed``)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from npc_memory.domain.dialogue import MAX_TURN_CHARS, TurnContext, stored_turn, turn_text
from npc_memory.domain.model import Speaker, Tier
from npc_memory.embedding.base import Embedder
from npc_memory.store.pool import Database
from npc_memory.store.sweep import pages

# Keyset pages over every row in primary-key order, history included: a closed fact is still searched with
# include_invalidated. This is maintenance over all players (on Citus, a scan of every shard per page).
# A dialogue turn is embedded again with its context, as the write path did (domain/dialogue.py): the scope's
# latest short row (not a gist) said within the window before it (closed rows included: it was context when
# stored), and the next one after it (a question's answer). Rows said at one moment are ordered by created_at,
# the clock at insert: a request's rows are inserted in request order, the order the write path used. Which
# rows are turns is decided from these (domain/dialogue.py ``stored_turn``). A question stored alone takes the
# answer a later request stored, as the write path gives it when that answer arrives (``answered_text``).
PAGE = """
SELECT m.user_id, m.heroine_id, m.id, m.content, m.speaker, m.tier, char_length(m.content) <= %(max_chars)s AS short,
       p.content AS previous, p.speaker AS previous_speaker, n.content AS following, n.speaker AS following_speaker
FROM user_memories m
LEFT JOIN LATERAL (
    SELECT p.content, p.speaker FROM user_memories p
    WHERE p.user_id = m.user_id AND p.heroine_id = m.heroine_id AND p.tier <> 'gist'
      AND char_length(p.content) <= %(max_chars)s
      AND p.valid_at >= m.valid_at - %(window)s::interval
      AND (p.valid_at < m.valid_at OR (p.valid_at = m.valid_at AND p.created_at < m.created_at))
    ORDER BY p.valid_at DESC, p.created_at DESC
    LIMIT 1) p ON m.tier <> 'gist' AND char_length(m.content) <= %(max_chars)s
LEFT JOIN LATERAL (
    SELECT n.content, n.speaker FROM user_memories n
    WHERE n.user_id = m.user_id AND n.heroine_id = m.heroine_id AND n.tier <> 'gist'
      AND char_length(n.content) <= %(max_chars)s
      AND n.valid_at <= m.valid_at + %(window)s::interval
      AND (n.valid_at > m.valid_at OR (n.valid_at = m.valid_at AND n.created_at > m.created_at))
    ORDER BY n.valid_at, n.created_at
    LIMIT 1) n ON m.tier <> 'gist' AND char_length(m.content) <= %(max_chars)s
WHERE %(after_user)s::text IS NULL OR (m.user_id, m.id) > (%(after_user)s, %(after_id)s::uuid)
ORDER BY m.user_id, m.id
LIMIT %(limit)s
"""

SET_EMBEDDING = """
UPDATE user_memories SET embedding = %(embedding)s, embedding_model = %(model)s, updated_at = now()
WHERE user_id = %(user_id)s AND id = %(id)s
"""


async def reembed_all(
    db: Database, embedder: Embedder, batch: int, progress: Callable[[int], object],
    context_window: timedelta = timedelta(0), context: TurnContext | None = None,
) -> int:
    """Rewrite every row's vector with ``embedder``, ``batch`` rows per transaction; return how many.

    Dialogue turns take the turn said at most ``context_window`` before them as context (0: none), shaped by
    the write settings in ``context`` (answer, which turns, speaker label) as the write path does.
    """
    shape = context or TurnContext()
    done = 0
    params = {"max_chars": MAX_TURN_CHARS if context_window > timedelta(0) else -1, "window": context_window}
    async for rows in pages(db, PAGE, batch, params):
        vectors = await embedder.embed_passages([_text(r, shape) for r in rows])
        async with db.transaction() as conn, conn.cursor() as write:
            await write.executemany(SET_EMBEDDING, [
                {"user_id": r["user_id"], "id": r["id"], "embedding": v, "model": embedder.name}
                for r, v in zip(rows, vectors, strict=True)
            ])
        done += len(rows)
        progress(len(rows))
    return done


def _text(row: dict[str, Any], shape: TurnContext) -> str:
    """The text a page row's vector is taken over: a turn with its context, anything else its content."""
    previous = None if row["previous"] is None else (row["previous"], Speaker(row["previous_speaker"]))
    following = None if row["following"] is None else (row["following"], Speaker(row["following_speaker"]))
    speaker = Speaker(row["speaker"])
    if not (row["short"] and stored_turn(row["content"], speaker, Tier(row["tier"]), previous, following)):
        return str(row["content"])
    return turn_text(row["content"], speaker, previous, following, shape, row["heroine_id"])
