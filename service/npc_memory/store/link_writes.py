"""The link statements the write paths share: add a link once, carry a closed memory's links to its successor."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from npc_memory.domain.links import Link
from npc_memory.domain.model import Scope

# The primary key (user_id, from_id, to_id, kind) makes a second discovery a no-op, also under concurrency.
# Both ends reference (user_id, heroine_id, id) of user_memories: a link across scopes fails the foreign key.
INSERT_LINK = """
INSERT INTO memory_links (user_id, heroine_id, from_id, to_id, kind, depth, via)
VALUES (%(user_id)s, %(heroine_id)s, %(from_id)s, %(to_id)s, %(kind)s, %(depth)s, %(via)s)
ON CONFLICT DO NOTHING
"""

# Superseding keeps the old version's links (as_of still sees them on history) and gives the successor copies
# of them, so a new version of a fact stays connected to what the old one was connected to.
CARRY_LINKS = """
INSERT INTO memory_links (user_id, heroine_id, from_id, to_id, kind, depth, via, discovered_at)
SELECT user_id, heroine_id,
       CASE WHEN from_id = %(old)s THEN %(new)s ELSE from_id END,
       CASE WHEN to_id = %(old)s THEN %(new)s ELSE to_id END,
       kind, depth, via, discovered_at
FROM memory_links
WHERE user_id = %(user_id)s AND heroine_id = %(heroine_id)s AND (from_id = %(old)s OR to_id = %(old)s)
  AND from_id <> %(new)s AND to_id <> %(new)s
ON CONFLICT DO NOTHING
"""


def link_params(scope: Scope, link: Link) -> dict[str, Any]:
    """INSERT_LINK's parameters for one link of ``scope``."""
    return {
        "user_id": scope.user_id, "heroine_id": scope.heroine_id, "from_id": link.from_id, "to_id": link.to_id,
        "kind": link.kind.value, "depth": link.depth, "via": link.via,
    }


def carry_params(scope: Scope, old: UUID, new: UUID) -> dict[str, Any]:
    """CARRY_LINKS' parameters: ``old`` was closed with ``new`` as its successor."""
    return {"user_id": scope.user_id, "heroine_id": scope.heroine_id, "old": old, "new": new}
