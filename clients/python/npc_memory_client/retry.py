"""Deadlines and retry policy shared by the sync and async clients."""

from __future__ import annotations

import random
from dataclasses import dataclass

import grpc


@dataclass(frozen=True)
class RetryPolicy:
    """Retries of idempotent calls on UNAVAILABLE, with capped exponential backoff and full jitter."""

    attempts: int = 4
    """Total tries, the first included; 1 disables retrying."""
    initial_backoff: float = 0.1
    """Upper bound of the first pause, in seconds."""
    max_backoff: float = 2.0
    """Cap on any one pause, in seconds."""
    multiplier: float = 2.0
    """Growth of the pause bound per attempt."""

    def pause(self, attempt: int) -> float:
        """The pause before retry number ``attempt`` (1 = the first retry), jittered."""
        bound = min(self.max_backoff, self.initial_backoff * self.multiplier ** (attempt - 1))
        return random.uniform(0, bound)


NO_RETRY = RetryPolicy(attempts=1)


def retryable(code: grpc.StatusCode | None, idempotent: bool) -> bool:
    """Whether a failed call may be tried again: only UNAVAILABLE, and only for idempotent calls."""
    return idempotent and code == grpc.StatusCode.UNAVAILABLE


def next_pause(
    policy: RetryPolicy, attempt: int, code: grpc.StatusCode | None, idempotent: bool, left: float
) -> float | None:
    """The pause before trying again after failed ``attempt``, or None to give up.

    ``left`` is the time remaining before the call's overall deadline: a retry that could not start
    before the deadline is not made.
    """
    if attempt >= policy.attempts or not retryable(code, idempotent):
        return None
    pause = policy.pause(attempt)
    return pause if pause < left else None
