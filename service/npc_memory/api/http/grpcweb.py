"""gRPC-Web for browsers and Unity WebGL: each call is framed off HTTP/1.1 and made on the service itself.

A gRPC-Web unary call is a POST of one length-prefixed message (``application/grpc-web+proto``, or base64 of it
as ``application/grpc-web-text``); the answer is the message frame and a trailer frame (flag 0x80) holding the
status as HTTP header lines. This module does that framing, as Envoy's grpc_web filter does, and makes the call on
the loopback channel: the interceptor checks the key and the player's namespace exactly as for a gRPC caller, and
the status details (google.rpc.BadRequest) come back byte for byte in ``grpc-status-details-bin``.
"""

from __future__ import annotations

import base64
import binascii
import struct
from collections.abc import Iterable, Sequence
from typing import Any

import grpc
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

SERVICE = "npc_memory.v1.MemoryService"
"""The one service offered over gRPC-Web (health and reflection stay on the gRPC port)."""
_TEXT = "application/grpc-web-text"
_BINARY = "application/grpc-web"
_TRAILER_FLAG = 0x80
_FRAME_HEAD = struct.Struct(">BI")
MAX_REQUEST_BYTES = 16 * 1024 * 1024
"""The largest framed request accepted (the server's own message limit)."""
_FORWARDED = ("authorization", "x-api-key", "x-request-id")
"""Request headers passed on as call metadata: the key and the caller's request id (cookies never are)."""
_TIMEOUT_UNITS = {"H": 3600.0, "M": 60.0, "S": 1.0, "m": 1e-3, "u": 1e-6, "n": 1e-9}
ALLOWED_HEADERS = ("content-type", "x-grpc-web", "x-user-agent", "grpc-timeout", *_FORWARDED)
"""Request headers a cross-origin browser may send (CORS)."""
EXPOSED_HEADERS = ("grpc-status", "grpc-message", "grpc-status-details-bin", "x-request-id")
"""Response headers a cross-origin browser may read (CORS)."""


class _RefusedError(Exception):
    """A request that is not a gRPC-Web unary call; answered with a gRPC status, never reaching the service."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code


def frames(body: bytes) -> list[tuple[int, bytes]]:
    """The (flag, payload) frames of a gRPC-Web body."""
    out = []
    at = 0
    while at < len(body):
        if len(body) - at < _FRAME_HEAD.size:
            raise _RefusedError(grpc.StatusCode.INVALID_ARGUMENT, "a gRPC-Web frame is cut short")
        flag, size = _FRAME_HEAD.unpack_from(body, at)
        at += _FRAME_HEAD.size
        if len(body) - at < size:
            raise _RefusedError(grpc.StatusCode.INVALID_ARGUMENT, "a gRPC-Web frame is cut short")
        out.append((flag, body[at:at + size]))
        at += size
    return out


def frame(flag: int, payload: bytes) -> bytes:
    """One length-prefixed frame."""
    return _FRAME_HEAD.pack(flag, len(payload)) + payload


def _percent(text: str) -> str:
    """``grpc-message`` as the gRPC wire wants it: printable ASCII kept, everything else %-encoded as UTF-8."""
    return "".join(chr(b) if 0x20 <= b <= 0x7E and b != 0x25 else f"%{b:02X}" for b in text.encode())


def trailer_block(code: grpc.StatusCode, message: str, metadata: Iterable[tuple[str, Any]]) -> bytes:
    """The trailer frame's payload: status, message and the call's trailing metadata as header lines."""
    lines = [f"grpc-status: {code.value[0]}", f"grpc-message: {_percent(message)}"]
    for key, value in metadata:
        shown = base64.b64encode(value).decode() if isinstance(value, bytes) else value
        lines.append(f"{key}: {shown}")
    return ("\r\n".join(lines) + "\r\n").encode()


def _timeout(header: str | None) -> float | None:
    """Seconds from a ``grpc-timeout`` header (``10S``, ``250m``); None when absent."""
    if not header:
        return None
    unit = _TIMEOUT_UNITS.get(header[-1:])
    if unit is None or not header[:-1].isdigit():
        raise _RefusedError(grpc.StatusCode.INVALID_ARGUMENT, f"grpc-timeout {header!r} is not a gRPC timeout")
    return int(header[:-1]) * unit


def _metadata(request: Request) -> list[tuple[str, str]]:
    return [(k, request.headers[k]) for k in _FORWARDED if k in request.headers]


async def _body(request: Request, text: bool) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_REQUEST_BYTES * (2 if text else 1):
        raise _RefusedError(grpc.StatusCode.RESOURCE_EXHAUSTED, "the request is larger than the service accepts")
    body = bytearray()
    async for chunk in request.stream():
        body.extend(chunk)
        if len(body) > MAX_REQUEST_BYTES * (2 if text else 1):
            raise _RefusedError(grpc.StatusCode.RESOURCE_EXHAUSTED, "the request is larger than the service accepts")
    if not text:
        return bytes(body)
    try:
        return base64.b64decode(bytes(body), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise _RefusedError(grpc.StatusCode.INVALID_ARGUMENT, "the grpc-web-text body is not base64") from exc


class GrpcWeb:
    """The gRPC-Web endpoint of MemoryService over a channel to the service."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        self._channel = channel

    def routes(self) -> Sequence[Route]:
        """Starlette routes: ``POST /npc_memory.v1.MemoryService/<Method>``."""
        return [Route(f"/{SERVICE}/{{method}}", self.handle, methods=["POST"])]

    async def handle(self, request: Request) -> Response:
        """Answer one gRPC-Web call: always HTTP 200, the gRPC status in the trailer frame."""
        content_type = request.headers.get("content-type", "")
        if not content_type.startswith(_BINARY):
            return Response("gRPC-Web expects content-type application/grpc-web[-text][+proto]\n", status_code=415,
                            media_type="text/plain")
        text = content_type.startswith(_TEXT)
        path = f"/{SERVICE}/{request.path_params['method']}"
        try:
            message = await self._message(request, text)
            timeout = _timeout(request.headers.get("grpc-timeout"))
        except _RefusedError as refused:
            return self._answer(content_type, text, None, refused.code, str(refused), ())
        # Bytes in, bytes out (no serializers): the service decodes and encodes the messages itself.
        method: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = self._channel.unary_unary(path)
        call = method(message, metadata=_metadata(request), timeout=timeout)
        try:
            answer = await call
        except grpc.aio.AioRpcError as error:
            return self._answer(content_type, text, None, error.code(), error.details() or "",
                                error.trailing_metadata() or ())
        return self._answer(content_type, text, answer, grpc.StatusCode.OK, "", await call.trailing_metadata() or ())

    async def _message(self, request: Request, text: bool) -> bytes:
        parts = frames(await _body(request, text))
        data = [payload for flag, payload in parts if not flag & _TRAILER_FLAG]
        if len(data) != 1 or any(flag & 1 for flag, _ in parts):
            raise _RefusedError(grpc.StatusCode.INVALID_ARGUMENT,
                           "a gRPC-Web unary call carries exactly one uncompressed message frame")
        return data[0]

    @staticmethod
    def _answer(content_type: str, text: bool, message: bytes | None, code: grpc.StatusCode, details: str,
                metadata: Iterable[tuple[str, Any]]) -> Response:
        body = (frame(0, message) if message is not None else b"") + frame(
            _TRAILER_FLAG, trailer_block(code, details, metadata))
        if text:
            body = base64.b64encode(body)
        return Response(body, status_code=200, media_type=content_type.split(";", maxsplit=1)[0])
