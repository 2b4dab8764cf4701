"""One transaction in one pipeline: BEGIN leaves with the first statements, COMMIT with the last.

psycopg's ``transaction()`` inside a pipeline opens two more pipeline levels, and each level syncs: a round trip when
the transaction begins, one before COMMIT and one after it, besides the outer pipeline's own. strace of a lone store
showed all four (BEGIN alone, the reads, the INSERT, COMMIT, then a bare Sync), three of them after the model: the
writes waited for the INSERT's answer before COMMIT was sent. Here BEGIN is queued with the block's first statements
and COMMIT with its last, so a block that reads then writes costs two round trips, the writes and COMMIT one.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import psycopg
from psycopg import pq

from npc_memory.store.pool import Connection

log = logging.getLogger(__name__)

_OPEN = (pq.TransactionStatus.INTRANS, pq.TransactionStatus.INERROR)


@asynccontextmanager
async def pipelined_transaction(conn: Connection) -> AsyncIterator[None]:
    """The block's statements in one transaction, pipelined; committed if the block and every statement succeed.

    Any error (the block's, a statement's reported at the pipeline's end, a failed COMMIT) or a cancellation rolls
    the transaction back before it is raised; the connection is autocommit, as the pool's are.
    """
    try:
        async with conn.pipeline():
            await conn.execute("BEGIN", prepare=False)
            yield
            await conn.execute("COMMIT", prepare=False)
    except BaseException:
        if conn.info.transaction_status in _OPEN:
            try:
                await conn.execute("ROLLBACK", prepare=False)
            except psycopg.Error as exc:  # the connection is broken: the pool discards it; the first error stands
                log.warning("rolling back a failed write transaction failed: %s", exc)
        raise
