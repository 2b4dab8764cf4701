"""Re-embedding every stored row with the configured model, page by page (``npc-memory reembed``)."""

from __future__ import annotations

from collections.abc import Callable
from uuid import UUID

from npc_memory.embedding.base import Embedder
from npc_memory.store.pool import Database

COUNT = "SELECT count(*) AS n FROM user_memories"

# Keyset pages over every row in primary-key order, history included: a closed fact is still searched with
# include_invalidated. This is maintenance over all players (on Citus, a scan of every shard per page).
PAGE = """
SELECT user_id, id, content FROM user_memories
WHERE %(after_user)s::text IS NULL OR (user_id, id) > (%(after_user)s, %(after_id)s::uuid)
ORDER BY user_id, id
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


async def reembed_all(db: Database, embedder: Embedder, batch: int, progress: Callable[[int], object]) -> int:
    """Rewrite every row's vector with ``embedder``, ``batch`` rows per transaction; return how many."""
    after: tuple[str, UUID] | None = None
    done = 0
    while True:
        async with db.connection() as conn:
            cur = await conn.execute(PAGE, {
                "after_user": after[0] if after else None, "after_id": after[1] if after else None, "limit": batch,
            })
            rows = await cur.fetchall()
        if not rows:
            return done
        vectors = await embedder.embed_passages([r["content"] for r in rows])
        async with db.transaction() as conn, conn.cursor() as write:
            await write.executemany(SET_EMBEDDING, [
                {"user_id": r["user_id"], "id": r["id"], "embedding": v, "model": embedder.name}
                for r, v in zip(rows, vectors, strict=True)
            ])
        after = (rows[-1]["user_id"], rows[-1]["id"])
        done += len(rows)
        progress(len(rows))
