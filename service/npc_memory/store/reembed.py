"""Re-embedding every stored row with the configured model, page by page (``npc-memory reembed``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from npc_memory.domain.dialogue import Line, turn_views, view_texts, view_vectors
from npc_memory.domain.model import Speaker
from npc_memory.embedding.base import Embedder
from npc_memory.store.pool import Database
from npc_memory.store.sweep import pages

# Keyset pages over every row in primary-key order, history included: a closed fact is still searched with
# include_invalidated. This is maintenance over all players (on Citus, a scan of every shard per page).
# A turn of a stated dialogue (StoreDialogue) is embedded again with its context as the write path makes it
# (domain/dialogue.py ``turn_views``, their vectors' mean): the turns at the positions just before and after it in
# its dialogue (the one of its own timeline first, for a dialogue continued on a loaded save). Every other row is
# embedded alone.
PAGE = """
SELECT m.user_id, m.heroine_id, m.id, m.content, m.speaker, m.speaker_name, m.dialogue_id,
       p.content AS previous, p.speaker AS previous_speaker, p.speaker_name AS previous_name,
       n.content AS following, n.speaker AS following_speaker, n.speaker_name AS following_name
FROM user_memories m
LEFT JOIN LATERAL (
    SELECT p.content, p.speaker, p.speaker_name FROM user_memories p
    WHERE p.user_id = m.user_id AND p.heroine_id = m.heroine_id AND p.dialogue_id = m.dialogue_id
      AND p.dialogue_position = m.dialogue_position - 1
    ORDER BY p.timeline_id = m.timeline_id DESC, p.created_at DESC
    LIMIT 1) p ON m.dialogue_id IS NOT NULL
LEFT JOIN LATERAL (
    SELECT n.content, n.speaker, n.speaker_name FROM user_memories n
    WHERE n.user_id = m.user_id AND n.heroine_id = m.heroine_id AND n.dialogue_id = m.dialogue_id
      AND n.dialogue_position = m.dialogue_position + 1
    ORDER BY n.timeline_id = m.timeline_id DESC, n.created_at DESC
    LIMIT 1) n ON m.dialogue_id IS NOT NULL
WHERE %(after_user)s::text IS NULL OR (m.user_id, m.id) > (%(after_user)s, %(after_id)s::uuid)
ORDER BY m.user_id, m.id
LIMIT %(limit)s
"""

SET_EMBEDDING = """
UPDATE user_memories SET embedding = %(embedding)s, embedding_model = %(model)s, updated_at = now()
WHERE user_id = %(user_id)s AND id = %(id)s
"""


async def reembed_all(db: Database, embedder: Embedder, batch: int, progress: Callable[[int], object]) -> int:
    """Rewrite every row's vector with ``embedder``, ``batch`` rows per transaction; return how many.

    A stated dialogue's turn takes the mean of its views' vectors, any other row a vector of its content alone.
    """
    done = 0
    async for rows in pages(db, PAGE, batch, {}):
        views = [embedded_texts(r) for r in rows]
        texts = view_texts(views)
        vectors = view_vectors(views, texts, await embedder.embed_passages(texts))
        async with db.transaction() as conn, conn.cursor() as write:
            await write.executemany(SET_EMBEDDING, [
                {"user_id": r["user_id"], "id": r["id"], "embedding": v, "model": embedder.name}
                for r, v in zip(rows, vectors, strict=True)
            ])
        done += len(rows)
        progress(len(rows))
    return done


def _line(row: dict[str, Any], prefix: str = "") -> Line | None:
    text = row[prefix] if prefix else row["content"]
    if text is None:
        return None
    speaker, name = (row[f"{prefix}_speaker"], row[f"{prefix}_name"]) if prefix else (row["speaker"],
                                                                                      row["speaker_name"])
    return Line(Speaker(speaker), text, name or "")


def embedded_texts(row: dict[str, Any]) -> tuple[str, ...]:
    """The texts a page row's vector is the mean of: a dialogue turn's views, anything else its content alone."""
    line = _line(row)
    assert line is not None
    if row["dialogue_id"] is None:
        return (line.text,)
    return turn_views(line, _line(row, "previous"), _line(row, "following"), row["heroine_id"])
