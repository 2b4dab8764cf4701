"""Re-making every row's BM25 terms and meaning signature with the configured text options (``retokenize``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from npc_memory.store.pool import Database
from npc_memory.store.sweep import pages
from npc_memory.text import Analysis, Tokenizer

# Keyset pages over every row in primary-key order, history included: a closed fact is still searched with
# include_invalidated and still compared by the duplicate rule's history reads.
PAGE = """
SELECT user_id, id, content FROM user_memories
WHERE %(after_user)s::text IS NULL OR (user_id, id) > (%(after_user)s, %(after_id)s::uuid)
ORDER BY user_id, id
LIMIT %(limit)s
"""

# Terms are derived from the content, which does not change: updated_at (the fact's audit time) stays.
SET_TERMS = """
UPDATE user_memories SET terms = %(terms)s, meaning = %(meaning)s
WHERE user_id = %(user_id)s AND id = %(id)s
"""


async def retokenize_all(db: Database, tokenizer: Tokenizer, batch: int, progress: Callable[[int], object]) -> int:
    """Rewrite every row's terms and meaning with ``tokenizer``, ``batch`` rows per transaction; return how many."""
    done = 0
    async for rows in pages(db, PAGE, batch):
        # Kiwi holds the GIL for a page's analysis; in a thread the pool's connections are still answered.
        analyses = await asyncio.to_thread(_analyse, tokenizer, [r["content"] for r in rows])
        async with db.transaction() as conn, conn.cursor() as write:
            await write.executemany(SET_TERMS, [
                {"user_id": r["user_id"], "id": r["id"], "terms": list(a.terms), "meaning": list(a.meaning)}
                for r, a in zip(rows, analyses, strict=True)
            ])
        done += len(rows)
        progress(len(rows))
    return done


def _analyse(tokenizer: Tokenizer, texts: list[str]) -> list[Analysis]:
    return [tokenizer.analyse(t) for t in texts]
