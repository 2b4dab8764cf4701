"""Who may see and edit on the inspector: the key's namespaces and RPCs, admin keys, the server's edit switch."""

from __future__ import annotations

from npc_memory.api.http.session import Caller
from npc_memory.ops.keys import ApiKey, hash_key

READER = ApiKey(name="reader", sha256=hash_key("r"), user_namespaces=("game-a:*",))
SEARCHER = ApiKey(name="searcher", sha256=hash_key("s"), rpcs=frozenset({"SearchMemories"}))
ADMIN = ApiKey(name="admin", sha256=hash_key("a"), admin=True)


def test_a_key_reads_its_namespace_only() -> None:
    """A game-a key may list game-a players and no other; a key without ListMemories may list none."""
    assert Caller("r", READER).may_read("game-a:p1")
    assert not Caller("r", READER).may_read("game-b:p1")
    assert not Caller("s", SEARCHER).may_read("game-a:p1")


def test_edits_need_an_admin_key_and_the_server_s_consent() -> None:
    """Only an admin key on a server that allows edits may edit; without keys the server's switch decides."""
    assert Caller("a", ADMIN).may_edit(allow_edits=True)
    assert not Caller("a", ADMIN).may_edit(allow_edits=False)
    assert not Caller("r", READER).may_edit(allow_edits=True)
    assert Caller("", None).may_edit(allow_edits=True)
    assert not Caller("", None).may_edit(allow_edits=False)
