"""How many cores the next model call may use: every idle one when it runs alone, one each when calls overlap."""

from __future__ import annotations

import fcntl
import os
import tempfile
import threading
import time
from collections import deque
from pathlib import Path

_STAT = "/proc/stat"  # first line: the machine's CPU time by state since boot, in clock ticks (Linux)
PROBE_WINDOW = 0.2
"""Seconds of history the estimate of other processes' load is taken over (/proc/stat counts clock ticks)."""


def usable_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def busy_elsewhere_seconds() -> float | None:
    """CPU seconds the machine was busy since boot, less this process's own (None where the kernel does not say)."""
    try:
        with open(_STAT, "rb") as fh:
            ticks = [int(x) for x in fh.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    busy = sum(ticks) - ticks[3] - ticks[4]  # every state but idle and iowait
    return busy / os.sysconf("SC_CLK_TCK") - time.process_time()


class OtherLoad:
    """How many cores other processes kept busy over the last ``window`` seconds or more (0 where unknown).

    Time-averaged rather than a count of threads runnable at one instant: on this VM /proc/loadavg showed one
    runnable thread besides the reader on an idle machine, and this process's own OpenMP threads spin runnable
    for a while after each call, so that count kept lone calls on one core. This process's own time is left out.
    """

    def __init__(self, window: float = PROBE_WINDOW) -> None:
        self._window = window
        self._at = time.monotonic()
        self._busy = busy_elsewhere_seconds()
        self._cores = 0.0

    def busy_cores(self) -> float:
        """The estimate, refreshed when a window has passed since the last refresh (callers hold a lock)."""
        now = time.monotonic()
        if now - self._at >= self._window:
            busy = busy_elsewhere_seconds()
            if busy is not None and self._busy is not None:
                self._cores = max(busy - self._busy, 0.0) / (now - self._at)
            self._at, self._busy = now, busy
        return self._cores


class MachineWide:
    """At most one process of the machine runs a model call on more than one core at a time (an advisory lock).

    Two processes that each saw idle cores (a test process and its server, two ``--workers``) otherwise start
    two OpenMP teams on the same cores, and each call then waits for the other's threads to leave them.
    """

    def __init__(self, path: Path | None = None) -> None:
        self._fd = os.open(path or Path(tempfile.gettempdir()) / "npc-memory-wide-model-call.lock",
                           os.O_RDWR | os.O_CREAT, 0o666)

    def try_acquire(self) -> bool:
        """Take the machine's wide slot if no other process holds it."""
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def release(self) -> None:
        """Give the slot back."""
        fcntl.flock(self._fd, fcntl.LOCK_UN)


class CoreBudget:
    """Hands out cores to model calls, first come first served (thread-safe; calls block in worker threads).

    A call that is the only one in flight gets every core of the budget that other processes have left idle
    lately (``OtherLoad``; lowest latency); calls that overlap get one core each (most throughput). Both
    rules keep an OpenMP team off cores that other work holds: its threads meet at many barriers a call, and one
    thread waiting for a core stalls the team each time, which made a wide call on a busy machine far slower than
    the same call on one core (docs/decisions/embedding-threads.md).
    """

    def __init__(self, total: int, idle_probe: bool = True) -> None:
        self.total = max(total, 1)
        self._idle_probe = idle_probe
        self._others = OtherLoad()
        self._machine = MachineWide() if idle_probe and self.total > 1 else None
        self._free = self.total
        self._calls = 0
        self._queue: deque[object] = deque()
        self._cv = threading.Condition()

    def _alone_width(self) -> int:
        if not self._idle_probe or self.total == 1:
            return self.total
        return max(1, min(self.total, int(usable_cores() - self._others.busy_cores() + 0.5)))

    def _grant(self, limit: int) -> int:
        """Cores for the call at the head of the line (counted in ``_calls``), or 0 while it must wait."""
        if self._calls == 1 and self._free == self.total:
            width = min(self._alone_width(), limit)
            if width > 1 and self._machine is not None and not self._machine.try_acquire():
                width = 1
            return width
        if self._calls > 1 and self._free > 0:
            return 1
        return 0

    def line_up(self, limit: int | None = None) -> tuple[int, object | None]:
        """Join the line without blocking: ``(cores, None)`` if the call may run now, else ``(0, ticket)`` to ``wait``.

        Called where the call is made (the event loop), so the order of the line is the order of the calls, and
        a call never starts ahead of one that waits: a pool thread blocked waiting can never sit in front of
        the call it waits for.
        """
        with self._cv:
            self._calls += 1
            if not self._queue and (granted := self._grant(limit or self.total)):
                self._free -= granted
                return granted, None
            ticket = object()
            self._queue.append(ticket)
            return 0, ticket

    def wait(self, ticket: object, limit: int | None = None) -> int:
        """Block until ``ticket`` is first in line and cores are free; return how many (at most ``limit``)."""
        with self._cv:
            while not (self._queue[0] is ticket and (granted := self._grant(limit or self.total))):
                self._cv.wait()
            self._queue.popleft()
            self._free -= granted
            self._cv.notify_all()  # the next in line may fit in what is left
            return granted

    def take(self, limit: int | None = None) -> int:
        """Block until this call may run; return how many cores (OpenMP threads, at most ``limit``) it gets."""
        granted, ticket = self.line_up(limit)
        return granted or self.wait(ticket, limit)

    def give(self, granted: int) -> None:
        """Return a finished call's cores."""
        with self._cv:
            if granted > 1 and self._machine is not None:
                self._machine.release()
            self._free += granted
            self._calls -= 1
            self._cv.notify_all()
