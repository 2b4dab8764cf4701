"""How many cores the next model call may use: all of them when it runs alone, one each when calls overlap."""

from __future__ import annotations

import os
import threading
from collections import deque


def usable_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


class CoreBudget:
    """Hands out cores to model calls, first come first served (thread-safe; calls block in worker threads).

    A call that is the only one in flight gets every core of the budget (lowest latency); calls that overlap get
    one core each (most throughput: no OpenMP team waits at its barriers for a thread that shares a core).
    """

    def __init__(self, total: int) -> None:
        self.total = max(total, 1)
        self._free = self.total
        self._calls = 0
        self._queue: deque[object] = deque()
        self._cv = threading.Condition()

    def take(self) -> int:
        """Block until this call may run; return how many cores (OpenMP threads) it gets."""
        ticket = object()
        with self._cv:
            self._calls += 1
            self._queue.append(ticket)
            while True:
                if self._queue[0] is ticket:
                    if self._calls == 1 and self._free == self.total:
                        granted = self.total
                        break
                    if self._calls > 1 and self._free > 0:
                        granted = 1
                        break
                self._cv.wait()
            self._queue.popleft()
            self._free -= granted
            self._cv.notify_all()  # the next in line may fit in what is left
            return granted

    def give(self, granted: int) -> None:
        """Return a finished call's cores."""
        with self._cv:
            self._free += granted
            self._calls -= 1
            self._cv.notify_all()
