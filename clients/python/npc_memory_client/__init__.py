"""A typed npc-memory client, blocking (``Client``) and asyncio (``AsyncClient``).

Plain values in (strings, ``Fact``, datetimes), frozen dataclasses out (``Memory``,
``ScoredMemory``, ``StoreResult``), and typed exceptions with the bad fields named::

    from npc_memory_client import Client, Fact

    with Client("localhost:50051") as memory:
        memory.store("player-1", "letia", ["고양이를 좋아함", Fact("매운 음식을 못 먹음", importance=7)])
        best = memory.search("player-1", "letia", "고양이 좋아해?", limit=3)[0]
        print(best.memory.content, best.scores.final)
"""

from npc_memory_client._results import MemoryPage, SearchHits
from npc_memory_client.aio import AsyncClient
from npc_memory_client.errors import (
    ClientError,
    ConflictError,
    DeadlineExceededError,
    FailedPreconditionError,
    FieldViolation,
    InvalidArgumentError,
    NotFoundError,
    UnavailableError,
)
from npc_memory_client.extraction import (
    ContextBlock,
    ContextItem,
    ContextSection,
    ExtractedMemory,
    ExtractionJob,
    RejectedFact,
    StoredDialogue,
    Turn,
)
from npc_memory_client.inputs import Fact
from npc_memory_client.model import (
    CloseReason,
    ContentType,
    Expansion,
    Fusion,
    Link,
    LinkKind,
    LinkView,
    Memory,
    MemoryFilter,
    SavePoint,
    SaveState,
    Scope,
    ScoredMemory,
    Scores,
    Speaker,
    StoreOutcome,
    StoreResult,
    Subject,
    Tier,
    Timeline,
    TurnPlace,
    Visibility,
    Weights,
)
from npc_memory_client.retry import NO_RETRY, RetryPolicy
from npc_memory_client.sync import Client

__all__ = [
    "NO_RETRY",
    "AsyncClient",
    "Client",
    "ClientError",
    "CloseReason",
    "ConflictError",
    "ContentType",
    "ContextBlock",
    "ContextItem",
    "ContextSection",
    "DeadlineExceededError",
    "Expansion",
    "ExtractedMemory",
    "ExtractionJob",
    "Fact",
    "FailedPreconditionError",
    "FieldViolation",
    "Fusion",
    "InvalidArgumentError",
    "Link",
    "LinkKind",
    "LinkView",
    "Memory",
    "MemoryFilter",
    "MemoryPage",
    "NotFoundError",
    "RejectedFact",
    "RetryPolicy",
    "SavePoint",
    "SaveState",
    "Scope",
    "ScoredMemory",
    "Scores",
    "SearchHits",
    "Speaker",
    "StoreOutcome",
    "StoreResult",
    "StoredDialogue",
    "Subject",
    "Tier",
    "Timeline",
    "Turn",
    "TurnPlace",
    "UnavailableError",
    "Visibility",
    "Weights",
]
