"""The wire form of memories that search answers with again and again (the rows of the scopes a server holds)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

from npc_memory_client.v1 import memory_pb2 as pb

from npc_memory.domain.model import Memory

Build = Callable[[pb.Memory, Memory], None]


class WireCache:
    """Serialized ``Memory`` messages of recently answered memory objects, by identity, least recent dropped first.

    A held scope answers with the same (frozen) memory objects request after request, and writing ~25 fields into
    each hit's message was ~12% of the server's CPU under a caller-vector search load (py-spy); merging a message's
    bytes is a single call into protobuf's C code. An object is serialized the second time it is answered, so the
    one-off objects of the statement's path only cost a dict entry. An entry keeps its object alive, so the object's
    ``id`` cannot be reused by another while the entry lasts.
    """

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._entries: OrderedDict[int, tuple[Memory, bytes | None]] = OrderedDict()

    def fill(self, out: pb.Memory, m: Memory, build: Build) -> None:
        """Write ``m`` into the empty message ``out`` (from its bytes when seen before), as ``build`` would."""
        key = id(m)
        found = self._entries.get(key)
        if found is not None and found[0] is m:
            self._entries.move_to_end(key)
            if found[1] is not None:
                out.MergeFromString(found[1])
                return
            build(out, m)
            self._entries[key] = (m, out.SerializeToString())
            return
        build(out, m)
        self._entries[key] = (m, None)
        if len(self._entries) > self._size:
            self._entries.popitem(last=False)
