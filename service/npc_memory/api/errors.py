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


def to_status(error: NpcMemoryError) -> status_pb2.Status:
    """The google.rpc.Status for one of our errors; INVALID_ARGUMENT carries a BadRequest."""
    code = next((c for t, c in _CODES.items() if isinstance(error, t)), code_pb2.INTERNAL)
    status = status_pb2.Status(code=code, message=str(error))
    if isinstance(error, InvalidArgumentError):
        detail = any_pb2.Any()
        detail.Pack(error_details_pb2.BadRequest(field_violations=[
            error_details_pb2.BadRequest.FieldViolation(field=v.field, description=v.description)
            for v in error.violations
        ]))
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
