"""ops/logs.py: JSON lines written on the writer's thread, with what the caller's thread knew when it logged."""

from __future__ import annotations

import io
import json
import logging
import logging.handlers
from collections.abc import Iterator

import pytest
from npc_memory.ops import logs
from npc_memory.ops.interceptor import REQUEST_ID


@pytest.fixture
def written() -> Iterator[io.StringIO]:
    """The service's logging for one test, writing here; the root logger as pytest had it afterwards."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    out = io.StringIO()
    logs.configure_logging("INFO", json_lines=True, stream=out)
    try:
        yield out
    finally:
        logs._stop_writer()
        root.handlers[:] = handlers
        root.setLevel(level)


def _fail() -> None:
    raise ZeroDivisionError("planned")


def test_lines_carry_the_callers_request_id_and_exception(written: io.StringIO) -> None:
    """The request id is the caller's when it logged (a context variable the writer's thread does not see)."""
    log = logging.getLogger("npc_memory.test_logs")
    handler = logging.getLogger().handlers[0]
    assert isinstance(handler, logging.handlers.QueueHandler)
    token = REQUEST_ID.set("rid-logs-1")
    log.info("rpc", extra={"rpc": "SearchMemories", "code": "OK", "ms": 1.5})
    try:
        _fail()
    except ZeroDivisionError:
        log.exception("%s failed unexpectedly", "StoreMemories")
    REQUEST_ID.reset(token)  # before the writer could have formatted either line
    logs._stop_writer()  # drains the queue
    lines = [json.loads(line) for line in written.getvalue().splitlines() if line.startswith("{")]
    access, failure = lines[-2:]
    assert access == {**access, "message": "rpc", "request_id": "rid-logs-1", "rpc": "SearchMemories", "code": "OK",
                      "ms": 1.5, "level": "INFO", "logger": "npc_memory.test_logs"}
    assert failure["message"] == "StoreMemories failed unexpectedly"
    assert failure["request_id"] == "rid-logs-1"
    assert "ZeroDivisionError: planned" in failure["exc_info"]
