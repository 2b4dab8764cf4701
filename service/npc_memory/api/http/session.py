"""Who is looking: the API key a browser signed in with (an HttpOnly cookie) or a script sent, and what it may do.

The key itself is the credential, as on the gRPC port: the cookie holds it, HttpOnly and SameSite=Strict (so no
other site's page can make the browser send it), Secure when the port speaks TLS. Every call the pages make
carries it to the service, whose interceptor decides; the checks here only choose what to show.
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import Request

from npc_memory.api.interceptor import presented_key
from npc_memory.ops.keys import ApiKey, KeyRing

COOKIE = "npc_memory_key"
"""The cookie holding the signed-in key."""
COOKIE_SECONDS = 12 * 3600
"""How long a sign-in lasts in the browser."""
READ_RPC = "ListMemories"
"""The RPC whose right a key needs to see a player's lists (heroines, recent players) on the inspector."""


@dataclass(frozen=True)
class Caller:
    """The person behind a request: the key presented ('' when the service has no keys) and its entry."""

    key: str
    entry: ApiKey | None
    """The matched key; None when the service has no keys (then everything is open, as on the gRPC port)."""

    @property
    def name(self) -> str:
        """The key's name, for the page header."""
        return self.entry.name if self.entry else "no API keys configured"

    def may_read(self, user_id: str) -> bool:
        """Whether the key may list this player's memories (the interceptor's own rule for ListMemories)."""
        return self.entry is None or (self.entry.allows_rpc(READ_RPC, True) and self.entry.allows_user(user_id))

    def may_edit(self, allow_edits: bool) -> bool:
        """Whether the pages offer edits: the server allows them and the key is an admin key (or there are none)."""
        return allow_edits and (self.entry is None or self.entry.admin)


def caller_of(request: Request, keys: KeyRing) -> Caller | None:
    """The signed-in caller, or None when keys guard the service and the request has no known key."""
    if not keys.enabled:
        return Caller("", None)
    headers = {k: v for k, v in request.headers.items()}
    presented = presented_key(headers) or request.cookies.get(COOKIE, "")
    entry = keys.find(presented) if presented else None
    return Caller(presented, entry) if entry else None
