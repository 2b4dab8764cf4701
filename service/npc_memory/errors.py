"""The service's own exceptions; api/errors.py maps each to one gRPC status code."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class FieldViolation:
    """One bad field of a request, named by its proto path (e.g. ``memories[2].importance``)."""

    field: str
    description: str


class NpcMemoryError(Exception):
    """Base of every error the service raises on purpose."""


class InvalidArgumentError(NpcMemoryError):
    """The request is malformed; nothing was written."""

    def __init__(self, violations: Sequence[FieldViolation]) -> None:
        self.violations = tuple(violations)
        super().__init__("; ".join(f"{v.field}: {v.description}" for v in self.violations))

    @classmethod
    def single(cls, field: str, description: str) -> InvalidArgumentError:
        """Build the error for one bad field."""
        return cls([FieldViolation(field, description)])


class NotFoundError(NpcMemoryError):
    """The named memory does not exist in the scope."""


class FailedPreconditionError(NpcMemoryError):
    """The request is well formed but the stored state does not allow it (e.g. closing a closed fact)."""


class ConflictError(NpcMemoryError):
    """A concurrent writer won a race the caller may retry."""


class UnavailableError(NpcMemoryError):
    """A dependency (the database, a remote embedder) cannot be reached right now."""


class InputRejectedError(NpcMemoryError):
    """A dependency refused the input it was given (e.g. an embedding endpoint: text too long for its model)."""

    def __init__(self, detail: str) -> None:
        self.detail = detail
        super().__init__(detail)


class ConfigError(NpcMemoryError):
    """The configuration is invalid; raised at start, never during a request."""
