"""The one place the service's errors become gRPC status codes, with google.rpc rich details.

The rules' refusals (domain/errors.py) are about facts and memories; here they are put in the request's terms:
the proto path of the field at fault (``memories[1].supersedes[0]``) and what is wrong with it.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from npc_memory.domain.errors import (
    CloseBeforeValidAtError,
    ContentEditNeedsEmbedderError,
    DialogueNeedsEmbedderError,
    EditOfClosedMemoryError,
    EmbeddingRequiredError,
    MemoryAlreadyClosedError,
    RequestIdReusedError,
    RuleViolationError,
    SourceImmutableError,
    SupersedeBeforeValidAtError,
    SupersedeTargetClosedError,
    TextRefusedError,
    TurnPlaceTakenError,
    UnknownLinkTargetError,
    UnknownSupersedeTargetError,
    VersionBeforeValidAtError,
)
from npc_memory.errors import (
    ConfigError,
    ConflictError,
    FailedPreconditionError,
    InputRejectedError,
    InvalidArgumentError,
    NotFoundError,
    NpcMemoryError,
    UnavailableError,
)

log = logging.getLogger(__name__)

_CODES: dict[type[NpcMemoryError], int] = {
    InvalidArgumentError: code_pb2.INVALID_ARGUMENT,
    NotFoundError: code_pb2.NOT_FOUND,
    FailedPreconditionError: code_pb2.FAILED_PRECONDITION,
    InputRejectedError: code_pb2.INVALID_ARGUMENT,
    ConflictError: code_pb2.ABORTED,
    UnavailableError: code_pb2.UNAVAILABLE,
    ConfigError: code_pb2.FAILED_PRECONDITION,
}

S = TypeVar("S")
Req = TypeVar("Req")
Resp = TypeVar("Resp")
Handler = Callable[[S, Req, Any], Awaitable[Resp]]


# The status travels in trailers twice (grpc-message percent-encoded, grpc-status-details-bin in base64), and
# clients refuse trailers over 8-16 KiB (RESOURCE_EXHAUSTED instead of our answer): 256 bad facts or one
# 100,000-character update_mask path must still arrive, so both are capped well under 8 KiB together.
MAX_VIOLATIONS = 20
MAX_VIOLATION_TEXT = 200
"""Bytes of each violation's field path and description."""
MAX_DETAILS_BYTES = 3500
MAX_MESSAGE_BYTES = 512


def _clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` UTF-8 bytes on a character boundary, marked with an ellipsis."""
    raw = text.encode()
    if len(raw) <= limit:
        return text
    return raw[: limit - 3].decode(errors="ignore") + "…"


def _bad_request(error: InvalidArgumentError) -> tuple[str, error_details_pb2.BadRequest]:
    """The summary message and the capped BadRequest of a request's violations."""
    bad = error_details_pb2.BadRequest()
    for v in error.violations[:MAX_VIOLATIONS]:
        violation = bad.field_violations.add(
            field=_clip(v.field, MAX_VIOLATION_TEXT), description=_clip(v.description, MAX_VIOLATION_TEXT)
        )
        if bad.ByteSize() > MAX_DETAILS_BYTES:
            bad.field_violations.remove(violation)
            break
    shown = len(bad.field_violations)
    message = "; ".join(f"{v.field}: {v.description}" if v.field else v.description for v in bad.field_violations)
    more = f" (and {len(error.violations) - shown} more)" if len(error.violations) > shown else ""
    return _clip(message, MAX_MESSAGE_BYTES - len(more)) + more, bad


def _supersedes(index: int, position: int) -> str:
    return f"memories[{index}].supersedes[{position}]"


RequestError = InvalidArgumentError | FailedPreconditionError


def _store_terms(error: RuleViolationError) -> RequestError | None:
    """StoreMemories' refusals: a bad supersedes entry, a reused request_id, a text without a vector."""
    invalid = InvalidArgumentError.single
    match error:
        case UnknownSupersedeTargetError(index=i, position=j, target=t):
            return invalid(_supersedes(i, j), f"no memory {t} in this scope")
        case SupersedeTargetClosedError(index=i, position=j, target=t):
            return FailedPreconditionError(f"{_supersedes(i, j)}: memory {t} is already closed")
        case SupersedeBeforeValidAtError(index=i, position=j, target=t):
            return invalid(_supersedes(i, j), f"memory {t} became valid after this fact's valid_at")
        case RequestIdReusedError():
            return invalid("request_id", "was already used for a different request within the idempotency window")
        case EmbeddingRequiredError(index=i):
            return invalid(f"memories[{i}].embedding", "required: this server has no embedder configured")
    return None


def _edit_terms(error: RuleViolationError) -> RequestError | None:
    """InvalidateMemory's and UpdateMemory's refusals."""
    invalid = InvalidArgumentError.single
    match error:
        case MemoryAlreadyClosedError(memory_id=m, closed_at=at):
            return FailedPreconditionError(f"memory {m} was already closed at {at}")
        case CloseBeforeValidAtError():
            return invalid("invalid_at", "is before the memory's valid_at")
        case EditOfClosedMemoryError(memory_id=m):
            return FailedPreconditionError(f"memory {m} is closed; only valid memories can be edited")
        case VersionBeforeValidAtError():
            return invalid("valid_at", "is before the current version's valid_at")
        case ContentEditNeedsEmbedderError():
            # UpdateMemoryRequest has no vector field, so the content itself is what this server cannot take.
            return invalid("content", "cannot be changed here: this server has no embedder configured and "
                           "UpdateMemory carries no vector; store the new text with StoreMemories (with its "
                           "embedding and supersedes) instead")
    return None


def _link_terms(error: RuleViolationError) -> RequestError | None:
    """Refusals about links and tiers: an unknown ``related``/``parents`` entry, an edit of a source."""
    match error:
        case UnknownLinkTargetError(index=i, field=f, position=j, target=t):
            return InvalidArgumentError.single(f"memories[{i}].{f}[{j}]", f"no memory {t} in this scope")
        case SourceImmutableError(memory_id=m):
            return FailedPreconditionError(f"memory {m} is a source; a source's content is never changed "
                                           "(store a new source, or edit the knowledge distilled from it)")
    return None


def _text_terms(error: RuleViolationError) -> RequestError | None:
    """A text the embedder refused: the fact's content when known, else the batch, the query or the content."""
    invalid = InvalidArgumentError.single
    match error:
        case TextRefusedError(source="memories", indices=(i,), detail=d):
            return invalid(f"memories[{i}].content", d)
        case TextRefusedError(source="memories", indices=many, detail=d):
            return invalid("memories", f"{d} (the text of one of {', '.join(f'memories[{i}]' for i in many)})")
        case TextRefusedError(source="turns", indices=(i,), detail=d):
            return invalid(f"dialogue.turns[{i}].text", d)
        case TextRefusedError(source="turns", detail=d):
            return invalid("dialogue.turns", f"{d} (the text of one of the turns, with its context)")
        case TextRefusedError(source=source, detail=d):
            return invalid(source, d)
    return None


def _dialogue_terms(error: RuleViolationError) -> RequestError | None:
    """StoreDialogue's refusals: a position holding another line, no embedder to make the turns' vectors."""
    invalid = InvalidArgumentError.single
    match error:
        case TurnPlaceTakenError(index=i, dialogue_id=d, position=p):
            return invalid(f"dialogue.turns[{i}].text", f"position {p} of dialogue {d!r} already holds another "
                           "line (first_position names where this request's first turn goes)")
        case DialogueNeedsEmbedderError():
            return invalid("dialogue.turns", "cannot be stored here: this server has no embedder configured and a "
                           "turn carries no vector")
    return None


def in_request_terms(error: RuleViolationError) -> RequestError:
    """A rule's refusal as the request error a client sees: the field at fault, or the state that forbids it."""
    # A refusal added to domain/errors.py without a case above is still the caller's request, never INTERNAL.
    return (_store_terms(error) or _edit_terms(error) or _link_terms(error) or _text_terms(error)
            or _dialogue_terms(error) or FailedPreconditionError(str(error)))


def to_status(error: NpcMemoryError) -> status_pb2.Status:
    """The google.rpc.Status for one of our errors; INVALID_ARGUMENT carries a BadRequest (both size-capped)."""
    if isinstance(error, RuleViolationError):
        error = in_request_terms(error)
    code = next((c for t, c in _CODES.items() if isinstance(error, t)), code_pb2.INTERNAL)
    status = status_pb2.Status(code=code, message=_clip(str(error), MAX_MESSAGE_BYTES))
    if isinstance(error, InvalidArgumentError):
        status.message, bad = _bad_request(error)
        detail = any_pb2.Any()
        detail.Pack(bad)
        status.details.append(detail)
    return status


def handle_errors(method: Handler[S, Req, Resp]) -> Handler[S, Req, Resp]:
    """Wrap a servicer method so our errors abort the call with their status and details."""

    @functools.wraps(method)
    async def wrapper(self: S, request: Req, context: grpc.aio.ServicerContext[Req, Resp]) -> Resp:
        try:
            return await method(self, request, context)
        except NpcMemoryError as exc:
            if isinstance(exc, UnavailableError | ConfigError):
                log.warning("%s failed: %s", method.__name__, exc)
            await context.abort_with_status(rpc_status.to_status(to_status(exc)))
            raise  # abort_with_status raises; this line only satisfies the type checker
        except asyncio.CancelledError:
            raise
        except Exception:  # a bug, not bad input: log it with its traceback and answer INTERNAL, never degrade
            log.exception("%s failed unexpectedly", method.__name__)
            await context.abort(grpc.StatusCode.INTERNAL, "internal error; the server log has the details")
            raise

    return wrapper
