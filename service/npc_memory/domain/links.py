"""Links between memories as plain values, and the rules that turn a batch's ``related``/``parents`` into links."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Literal
from uuid import UUID

from npc_memory.domain.errors import UnknownLinkTargetError
from npc_memory.domain.model import AnalysedFact, Memory, PreparedMemory, StoreResult

LinkField = Literal["related", "parents"]
"""The MemoryInput list a link came from."""



class LinkKind(StrEnum):
    """How two memories are linked."""

    RELATED_TO = "related_to"
    DERIVED_FROM = "derived_from"


@dataclass(frozen=True)
class Link:
    """One link of a scope: ``from_id`` → ``to_id``; depth 0 when the game named it."""

    from_id: UUID
    to_id: UUID
    kind: LinkKind
    depth: int = 0
    via: str = ""
    discovered_at: datetime | None = None


@dataclass(frozen=True)
class Expansion:
    """What one ExpandMemory call did: the depth it reached, the links it made, the linked total."""

    memory_id: UUID
    depth: int
    found: list[tuple[Link, Memory]]
    total_linked: int


@dataclass(frozen=True)
class LinkView:
    """A memory's links by role."""

    parents: list[Link]
    children: list[Link]
    related: list[Link]


def referenced_ids(items: Sequence[AnalysedFact]) -> list[UUID]:
    """The stored memories a batch's facts name in ``related`` or ``parents`` (to be read under the lock)."""
    return list(dict.fromkeys(
        r for i in items for r in (*i.fact.related, *i.fact.parents) if isinstance(r, UUID)
    ))


def batch_links(
    items: Sequence[PreparedMemory], results: Sequence[StoreResult], known: Collection[UUID]
) -> list[Link]:
    """The links a stored batch makes, ends resolved to the ids the results name (a duplicate's stored row).

    ``known`` are the ids of the scope that exist; a reference to any other id raises UnknownLinkTargetError
    (so nothing is written). A fact naming itself, directly or through a duplicate, makes no link.
    """
    links: dict[tuple[UUID, UUID, LinkKind], Link] = {}
    for index, item in enumerate(items):
        source = results[index].memory_id
        fields: tuple[tuple[LinkField, LinkKind], ...] = (
            ("related", LinkKind.RELATED_TO), ("parents", LinkKind.DERIVED_FROM))
        for name, kind in fields:
            for position, ref in enumerate(getattr(item.fact, name)):
                if isinstance(ref, int):
                    target = results[ref].memory_id
                elif ref in known:
                    target = ref
                else:
                    raise UnknownLinkTargetError(index, name, position, ref)
                if target != source:
                    links.setdefault((source, target, kind), Link(source, target, kind))
    return list(links.values())
