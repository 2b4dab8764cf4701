"""The one place the service's errors become gRPC status codes, with google.rpc rich details."""

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

from npc_memory.errors import (
    ConfigError,
    ConflictError,
    FailedPreconditionError,
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


def to_status(error: NpcMemoryError) -> status_pb2.Status:
    """The google.rpc.Status for one of our errors; INVALID_ARGUMENT carries a BadRequest (both size-capped)."""
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
