"""Logging set up once in ``main``: JSON lines (python-json-logger), each with the call's request id."""

from __future__ import annotations

import logging
from contextvars import ContextVar

from pythonjsonlogger.json import JsonFormatter

REQUEST_ID: ContextVar[str] = ContextVar("request_id", default="")
"""The current call's request id; the JSON log formatter adds it to every record."""


class _RequestId(logging.Filter):
    """Adds the current call's request id (empty outside a call) to every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = REQUEST_ID.get()
        return True


def configure_logging(level: str, json_lines: bool) -> None:
    """Root logging: JSON lines with request ids, or the plain format for a terminal."""
    handler = logging.StreamHandler()
    handler.addFilter(_RequestId())
    if json_lines:
        handler.setFormatter(JsonFormatter(
            "{asctime}{levelname}{name}{message}{request_id}", style="{",
            rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
        ))
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)
