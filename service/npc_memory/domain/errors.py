"""Refusals of the write and edit rules, in domain terms (which fact, which target, which memory).

They say nothing of request fields or status codes: api/errors.py names the field of the request each one is
about and picks the gRPC status, so the rules can be used (and tested) without the api.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Literal
from uuid import UUID

from npc_memory.errors import NpcMemoryError


class RuleViolationError(NpcMemoryError):
    """A well-formed request refused for what it asks (a rule, the stored state, the embedder's limits)."""


TextSource = Literal["memories", "query", "content", "turns"]
"""Where the refused text came from: facts to store, a search query, a content edit, a dialogue's turns."""


class UnknownSupersedeTargetError(RuleViolationError):
    """A fact's ``supersedes`` entry names no memory of the scope."""

    def __init__(self, index: int, position: int, target: UUID) -> None:
        self.index, self.position, self.target = index, position, target
        super().__init__(f"fact {index}, supersedes entry {position}: no memory {target} in this scope")


class SupersedeTargetClosedError(RuleViolationError):
    """A fact's ``supersedes`` entry names a memory that is already closed."""

    def __init__(self, index: int, position: int, target: UUID) -> None:
        self.index, self.position, self.target = index, position, target
        super().__init__(f"fact {index}, supersedes entry {position}: memory {target} is already closed")


class SupersedeBeforeValidAtError(RuleViolationError):
    """A fact's ``supersedes`` entry names a memory that became valid after the fact itself."""

    def __init__(self, index: int, position: int, target: UUID) -> None:
        self.index, self.position, self.target = index, position, target
        super().__init__(f"fact {index}, supersedes entry {position}: "
                         f"memory {target} became valid after this fact's valid_at")


class MemoryAlreadyClosedError(RuleViolationError):
    """Invalidating a memory that is already closed."""

    def __init__(self, memory_id: UUID, closed_at: datetime) -> None:
        self.memory_id, self.closed_at = memory_id, closed_at
        super().__init__(f"memory {memory_id} was already closed at {closed_at}")


class CloseBeforeValidAtError(RuleViolationError):
    """Invalidating a memory at a time before it became valid."""

    def __init__(self, memory_id: UUID) -> None:
        self.memory_id = memory_id
        super().__init__(f"memory {memory_id}: invalid_at is before its valid_at")


class EditOfClosedMemoryError(RuleViolationError):
    """A content edit of a memory that is closed; only valid memories get new versions."""

    def __init__(self, memory_id: UUID) -> None:
        self.memory_id = memory_id
        super().__init__(f"memory {memory_id} is closed; only valid memories can be edited")


class VersionBeforeValidAtError(RuleViolationError):
    """A content edit whose new version would begin before the current version."""

    def __init__(self, memory_id: UUID) -> None:
        self.memory_id = memory_id
        super().__init__(f"memory {memory_id}: the new version's valid_at is before the current version's")


class RequestIdReusedError(RuleViolationError):
    """A live idempotency key sent again with different facts."""

    def __init__(self, request_id: str) -> None:
        self.request_id = request_id
        super().__init__(f"request id {request_id!r} was already used for a different request")


class EmbeddingRequiredError(RuleViolationError):
    """A fact to store came without a vector and the server has no embedder to make one."""

    def __init__(self, index: int) -> None:
        self.index = index
        super().__init__(f"fact {index} has no vector and this server has no embedder configured")


class TextRefusedError(RuleViolationError):
    """The embedder refused a text of the request as input (e.g. too long for its model); nothing was written."""

    def __init__(self, source: TextSource, indices: Sequence[int], detail: str) -> None:
        self.source, self.indices, self.detail = source, tuple(indices), detail
        """``indices``: for facts to store, the batch positions of the texts sent together (one of them is
        at fault); empty otherwise."""
        super().__init__(f"{source} {list(self.indices)}: {detail}" if self.indices else f"{source}: {detail}")


class ContentEditNeedsEmbedderError(RuleViolationError):
    """A content edit on a server without an embedder: the new version could get no vector."""

    def __init__(self, memory_id: UUID) -> None:
        self.memory_id = memory_id
        super().__init__(f"memory {memory_id}: content edits need an embedder and this server has none")


class UnknownLinkTargetError(RuleViolationError):
    """A fact's ``related`` or ``parents`` entry names no memory of the scope."""

    def __init__(self, index: int, field: str, position: int, target: UUID) -> None:
        self.index, self.field, self.position, self.target = index, field, position, target
        super().__init__(f"fact {index}, {field} entry {position}: no memory {target} in this scope")


class SourceImmutableError(RuleViolationError):
    """A content edit of a ``source`` memory: sources are the raw record and are never rewritten."""

    def __init__(self, memory_id: UUID) -> None:
        self.memory_id = memory_id
        super().__init__(f"memory {memory_id} is a source; a source's content is never changed")


class DialogueNeedsEmbedderError(RuleViolationError):
    """StoreDialogue on a server without an embedder: its turns carry no vectors, so none could be made."""

    def __init__(self) -> None:
        super().__init__("StoreDialogue needs an embedder and this server has none")


class TurnPlaceTakenError(RuleViolationError):
    """A turn sent at a position of its dialogue that already holds another line."""

    def __init__(self, index: int, dialogue_id: str, position: int) -> None:
        self.index, self.dialogue_id, self.position = index, dialogue_id, position
        super().__init__(f"turn {index}: position {position} of dialogue {dialogue_id!r} holds another line")
