"""Client exceptions: one per gRPC status the service uses, with google.rpc.BadRequest details parsed."""

from __future__ import annotations

from dataclasses import dataclass

import grpc
from google.rpc import error_details_pb2, status_pb2

# The trailer in which a gRPC server sends the full google.rpc.Status, details included.
STATUS_DETAILS_KEY = "grpc-status-details-bin"
# The trailer in which npc-memory sends the call's request id (the caller's x-request-id, or one it made).
REQUEST_ID_KEY = "x-request-id"


@dataclass(frozen=True)
class FieldViolation:
    """One bad request field, named by its proto path (e.g. ``memories[0].content``)."""

    field: str
    description: str


class ClientError(Exception):
    """A call to npc-memory failed; ``code`` is the gRPC status code."""

    code: grpc.StatusCode = grpc.StatusCode.UNKNOWN
    request_id: str = ""
    """The server's id for the failed call, which its log lines carry; empty when no server answered with one."""

    def __init__(self, message: str, code: grpc.StatusCode | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class InvalidArgumentError(ClientError):
    """The request was rejected; ``violations`` names every bad field."""

    code = grpc.StatusCode.INVALID_ARGUMENT

    def __init__(self, message: str, violations: tuple[FieldViolation, ...]) -> None:
        # npc-memory's own message already names each field; only what it does not say is added.
        unsaid = [text for v in violations if (text := f"{v.field}: {v.description}") not in message]
        named = "; ".join(unsaid)
        super().__init__(f"{message} ({named})" if message and named else message or named)
        self.violations = violations

    @property
    def fields(self) -> dict[str, str]:
        """The bad fields by proto path, with what is wrong with each."""
        return {v.field: v.description for v in self.violations}


class NotFoundError(ClientError):
    """The memory does not exist in this scope."""

    code = grpc.StatusCode.NOT_FOUND


class FailedPreconditionError(ClientError):
    """The server cannot do this in its current state or configuration."""

    code = grpc.StatusCode.FAILED_PRECONDITION


class ConflictError(ClientError):
    """A concurrent change won (ABORTED); retrying the whole operation may succeed."""

    code = grpc.StatusCode.ABORTED


class UnavailableError(ClientError):
    """The server or its database is unreachable (after any retries)."""

    code = grpc.StatusCode.UNAVAILABLE


class DeadlineExceededError(ClientError):
    """The call's deadline passed before an answer came."""

    code = grpc.StatusCode.DEADLINE_EXCEEDED


_BY_CODE: dict[grpc.StatusCode, type[ClientError]] = {
    cls.code: cls
    for cls in (NotFoundError, FailedPreconditionError, ConflictError, UnavailableError, DeadlineExceededError)
}


def _trailer(error: grpc.Call | grpc.aio.AioRpcError, wanted: str) -> str | bytes | None:
    """The value of the ``wanted`` key in the call's trailing metadata, or None."""
    for key, value in error.trailing_metadata() or ():
        if key == wanted:
            return value
    return None


def _status(error: grpc.Call | grpc.aio.AioRpcError) -> status_pb2.Status | None:
    value = _trailer(error, STATUS_DETAILS_KEY)
    return status_pb2.Status.FromString(value) if isinstance(value, bytes) else None


def _violations(error: grpc.Call | grpc.aio.AioRpcError) -> tuple[FieldViolation, ...]:
    status = _status(error)
    if status is None:
        return ()
    found: list[FieldViolation] = []
    for detail in status.details:
        bad = error_details_pb2.BadRequest()
        if detail.Unpack(bad):
            found += [FieldViolation(v.field, v.description) for v in bad.field_violations]
    return tuple(found)


def _request_id(error: grpc.Call | grpc.aio.AioRpcError) -> str:
    value = _trailer(error, REQUEST_ID_KEY)
    return value if isinstance(value, str) else ""


def from_rpc_error(error: grpc.RpcError) -> ClientError:
    """The typed exception for a failed call (sync ``grpc.RpcError`` or ``grpc.aio.AioRpcError``)."""
    if not isinstance(error, grpc.Call | grpc.aio.AioRpcError):
        return ClientError(str(error))
    code, message = error.code(), error.details() or ""
    found = (InvalidArgumentError(message, _violations(error)) if code == grpc.StatusCode.INVALID_ARGUMENT
             else _BY_CODE.get(code, ClientError)(message, code))
    found.request_id = _request_id(error)
    return found
