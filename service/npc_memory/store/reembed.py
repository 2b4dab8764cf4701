"""Re-embedding every stored row with the configured model, page by page (``npc-memory reembed``)."""

from __future__ import annotations

from collections.abc import Callable
from uuid import UUID

from npc_memory.embedding.base import Embedder
from npc_memory.store.pool import Database

COUNT = "SELECT count(*) AS n FROM user_memories"

# Keyset pages over every row, history included: a closed fact is still searched with include_invalidated.
PAGE = """
SELECT id, content FROM user_memories
WHERE %(after)s::uuid IS NULL OR id > %(after)s
ORDER BY id
LIMIT %(limit)s
"""

SET_EMBEDDING = """
UPDATE user_memories SET embedding = %(embedding)s, embedding_model = %(model)s, updated_at = now()
WHERE id = %(id)s
"""


async def count_rows(db: Database) -> int:
    """How many rows a re-embed will rewrite."""
    async with db.connection() as conn:
        cur = await conn.execute(COUNT)
        row = await cur.fetchone()
    return int(row["n"]) if row else 0


async def reembed_all(db: Database, embedder: Embedder, batch: int, progress: Callable[[int], object]) -> int:
    """Rewrite every row's vector with ``embedder``, ``batch`` rows per transaction; return how many."""
    after: UUID | None = None
    done = 0
    while True:
        async with db.connection() as conn:
            cur = await conn.execute(PAGE, {"after": after, "limit": batch})
            rows = await cur.fetchall()
        if not rows:
            return done
        vectors = await embedder.embed_passages([r["content"] for r in rows])
        async with db.transaction() as conn, conn.cursor() as write:
            await write.executemany(SET_EMBEDDING, [
                {"id": r["id"], "embedding": v, "model": embedder.name} for r, v in zip(rows, vectors, strict=True)
            ])
        after = rows[-1]["id"]
        done += len(rows)
        progress(len(rows))
