"""The event loop ``serve`` runs on: uvloop where installed (or asked for), else the standard one."""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from npc_memory.config.server import EventLoop
from npc_memory.errors import ConfigError

R = TypeVar("R")


def loop_factory(kind: EventLoop) -> Callable[[], asyncio.AbstractEventLoop]:
    """The constructor of the loop ``kind`` names; ``uvloop`` asked for but not installed is a ConfigError."""
    if kind == "asyncio" or (kind == "auto" and importlib.util.find_spec("uvloop") is None):
        return asyncio.new_event_loop
    try:
        import uvloop
    except ImportError as exc:
        raise ConfigError("event_loop uvloop: the uvloop package is not installed (pip install uvloop)") from exc
    return uvloop.new_event_loop


def run(main: Coroutine[Any, Any, R], kind: EventLoop) -> R:
    """Run ``main`` to completion on a new loop of ``kind`` (``asyncio.run`` with a chosen loop)."""
    with asyncio.Runner(loop_factory=loop_factory(kind)) as runner:
        return runner.run(main)

