"""Re-embedding every stored row with the configured model, page by page (``npc-memory reembed``)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from uuid import UUID

from npc_memory.domain.dialogue import MAX_TURN_CHARS, with_previous
from npc_memory.embedding.base import Embedder
from npc_memory.store.pool import Database

COUNT = "SELECT count(*) AS n FROM user_memories"

# Keyset pages over every row in primary-key order, history included: a closed fact is still searched with
# include_invalidated. This is maintenance over all players (on Citus, a scan of every shard per page).
# A dialogue turn is embedded again with the turn before it, as the write path did (domain/dialogue.py): the
# scope's latest source turn said within the window before it (closed rows included: it was context when
# stored; a turn of the same minute, which the write path ordered by request position, is not found here).
PAGE = """
SELECT m.user_id, m.id, m.content,
       CASE WHEN m.tier = 'source' AND char_length(m.content) <= %(max_chars)s THEN (
           SELECT p.content FROM user_memories p
           WHERE p.user_id = m.user_id AND p.heroine_id = m.heroine_id AND p.tier = 'source'
             AND char_length(p.content) <= %(max_chars)s
             AND p.valid_at < m.valid_at AND p.valid_at >= m.valid_at - %(window)s::interval
           ORDER BY p.valid_at DESC, p.created_at DESC
           LIMIT 1) END AS previous
FROM user_memories m
WHERE %(after_user)s::text IS NULL OR (m.user_id, m.id) > (%(after_user)s, %(after_id)s::uuid)
ORDER BY m.user_id, m.id
LIMIT %(limit)s
"""

SET_EMBEDDING = """
UPDATE user_memories SET embedding = %(embedding)s, embedding_model = %(model)s, updated_at = now()
WHERE user_id = %(user_id)s AND id = %(id)s
"""


async def count_rows(db: Database) -> int:
    """How many rows a re-embed will rewrite."""
    async with db.connection() as conn:
        cur = await conn.execute(COUNT)
        row = await cur.fetchone()
    return int(row["n"]) if row else 0


async def reembed_all(
    db: Database, embedder: Embedder, batch: int, progress: Callable[[int], object],
    context_window: timedelta = timedelta(0),
) -> int:
    """Rewrite every row's vector with ``embedder``, ``batch`` rows per transaction; return how many.

    Dialogue turns take the turn said at most ``context_window`` before them as context (0: none).
    """
    after: tuple[str, UUID] | None = None
    done = 0
    while True:
        async with db.connection() as conn:
            cur = await conn.execute(PAGE, {
                "after_user": after[0] if after else None, "after_id": after[1] if after else None, "limit": batch,
                "max_chars": MAX_TURN_CHARS if context_window > timedelta(0) else -1, "window": context_window,
            })
            rows = await cur.fetchall()
        if not rows:
            return done
        vectors = await embedder.embed_passages([with_previous(r["previous"], r["content"]) for r in rows])
        async with db.transaction() as conn, conn.cursor() as write:
            await write.executemany(SET_EMBEDDING, [
                {"user_id": r["user_id"], "id": r["id"], "embedding": v, "model": embedder.name}
                for r, v in zip(rows, vectors, strict=True)
            ])
        after = (rows[-1]["user_id"], rows[-1]["id"])
        done += len(rows)
        progress(len(rows))
