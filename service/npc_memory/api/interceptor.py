"""The one server interceptor: request id, API key and namespace check, latency metric and the access log.

It wraps each MemoryService method's handler, so it sees the deserialised request (and its user id) before the
servicer runs: a refused call never reaches the engine or the database.

The request id goes back in the trailing metadata, beside the call's status, however the call ends. gRPC's asyncio
server sends the answer, the status and the trailing metadata in one operation; custom initial metadata would be an
operation of its own, whose completion comes back through gRPC's poller thread, on every call.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, cast

import grpc
from npc_memory_client.v1 import memory_pb2

from npc_memory.api.deserialize import decoded
from npc_memory.ops.keys import KeyRing
from npc_memory.ops.logs import REQUEST_ID
from npc_memory.ops.metrics import RPC_SECONDS, SEARCH_CANDIDATES, STORE_OUTCOMES

log = logging.getLogger("npc_memory.access")


MEMORY_SERVICE = "/npc_memory.v1.MemoryService/"
REQUEST_ID_KEY = "x-request-id"
"""The metadata key of the request id: the caller's, if sent, and the answer's trailing metadata."""
MAX_REQUEST_ID = 128
"""A caller's x-request-id is cut to this many characters before it is logged and echoed."""
Behavior = Callable[[Any, grpc.aio.ServicerContext[Any, Any]], Awaitable[Any]]


def user_id_of(request: Any) -> str | None:
    """The player a request names (``user_id`` or ``scope.user_id``), or None for one that names none."""
    if isinstance(request, bytes):  # undecodable: the handler answers INVALID_ARGUMENT
        return None
    fields = request.DESCRIPTOR.fields_by_name
    if "user_id" in fields:
        return str(request.user_id)
    if "scope" in fields:
        return str(request.scope.user_id)
    return None


def presented_key(metadata: dict[str, str]) -> str:
    """The key from ``authorization: Bearer <key>`` or ``x-api-key``; empty when neither is sent."""
    auth = metadata.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip()
    return metadata.get("x-api-key", "").strip()


DEADLINE_SLACK = 0.1
"""Seconds: a client gives up at its deadline, which reaches the server as a cancel a few ms before the server's
copy of it (that copy starts when the request arrives), so a cancel this close to the deadline is the deadline."""


def _abandoned(context: grpc.aio.ServicerContext[Any, Any]) -> grpc.StatusCode:
    """Why gRPC cancelled a handler: its deadline passed, else the client (or a stopping server) cancelled it."""
    left = context.time_remaining()
    past_deadline = left is not None and left < DEADLINE_SLACK
    return grpc.StatusCode.DEADLINE_EXCEEDED if past_deadline else grpc.StatusCode.CANCELLED


def _log_access(extra: dict[str, Any]) -> None:
    log.info("rpc", extra=extra)


def _record_outcome(method: str, response: Any) -> None:
    if method == "StoreMemories":
        for result in response.results:
            outcome = memory_pb2.StoreOutcome.Name(result.outcome).removeprefix("STORE_OUTCOME_").lower()
            STORE_OUTCOMES.labels(outcome).inc()
    elif method == "SearchMemories":
        SEARCH_CANDIDATES.observe(len(response.results))


class _RequestIdKept:
    """The call's context for the handler: an abort keeps the request id in the trailing metadata it sends.

    gRPC's abort replaces the call's trailing metadata with the abort's own when it brings any (a status with
    details does); everything else is the call's own context.
    """

    def __init__(self, context: grpc.aio.ServicerContext[Any, Any], request_id: str) -> None:
        self._context = context
        self._request_id = request_id

    def __getattr__(self, name: str) -> Any:
        return getattr(self._context, name)

    async def abort(self, code: grpc.StatusCode, details: str = "", trailing_metadata: Any = ()) -> None:
        """The call's ``abort``, the request id added to its trailing metadata."""
        await self._context.abort(code, details, (*trailing_metadata, (REQUEST_ID_KEY, self._request_id)))

    async def abort_with_status(self, status: Any) -> None:
        """The call's ``abort_with_status``, the request id added to its trailing metadata."""
        await self.abort(status.code, status.details, status.trailing_metadata)


class ServiceInterceptor(grpc.aio.ServerInterceptor):
    """Authenticates, authorises, times and logs every MemoryService call; health and reflection stay open."""

    def __init__(self, keys: KeyRing, log_user_ids: bool = False) -> None:
        self._keys = keys
        self._log_user_ids = log_user_ids
        # Each method's wrapped handler, made once: gRPC resolves the same registered handler for every call.
        self._wrapped: dict[str, tuple[grpc.RpcMethodHandler[Any, Any], grpc.RpcMethodHandler[Any, Any]]] = {}

    async def intercept_service(
        self, continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        """The handler, its unary behaviour wrapped in the checks; health and reflection pass unchanged."""
        handler = await continuation(details)
        path: str = details.method
        if handler is None or handler.unary_unary is None or not path.startswith(MEMORY_SERVICE):
            return handler
        found = self._wrapped.get(path)
        if found is not None and found[0] is handler:
            return found[1]
        method = path.rsplit("/", 1)[-1]
        wrapped = grpc.unary_unary_rpc_method_handler(
            self._wrap(method, cast(Behavior, handler.unary_unary)),
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )
        self._wrapped[path] = (handler, wrapped)
        return wrapped

    def _wrap(self, method: str, behavior: Behavior) -> Behavior:
        async def guarded(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            if isinstance(request, bytes):  # the service decodes its own requests (api/deserialize.py)
                request = decoded(method, request)
            metadata = {k: v for k, v in context.invocation_metadata() or () if isinstance(v, str)}
            request_id = metadata.get(REQUEST_ID_KEY, "")[:MAX_REQUEST_ID] or uuid.uuid4().hex
            token = REQUEST_ID.set(request_id)
            start = time.perf_counter()
            context.set_trailing_metadata(((REQUEST_ID_KEY, request_id),))
            guarded_context = cast(grpc.aio.ServicerContext[Any, Any], _RequestIdKept(context, request_id))
            code = grpc.StatusCode.OK
            try:
                await self._authorize(method, request, metadata, guarded_context)
                response = await behavior(request, guarded_context)
            except asyncio.CancelledError:
                code = context.code() or _abandoned(context)
                raise
            except BaseException:
                code = context.code() or grpc.StatusCode.UNKNOWN
                raise
            else:
                code = context.code() or grpc.StatusCode.OK
                if code == grpc.StatusCode.OK and response is not None:
                    _record_outcome(method, response)
                return response
            finally:
                elapsed = time.perf_counter() - start
                code_name = code.name if isinstance(code, grpc.StatusCode) else str(code)
                RPC_SECONDS.labels(method, code_name).observe(elapsed)
                extra: dict[str, Any] = {"rpc": method, "code": code_name, "ms": round(elapsed * 1000, 2)}
                if self._log_user_ids:
                    extra["user_id"] = user_id_of(request)
                # Written on the loop's next turn, after the answer went to gRPC: making, formatting and writing a
                # JSON line before the answer made every call that much later. The callback runs in a copy of this
                # context, so it keeps the request id.
                asyncio.get_running_loop().call_soon(_log_access, extra)
                REQUEST_ID.reset(token)

        return guarded

    async def _authorize(
        self, method: str, request: Any, metadata: dict[str, str], context: grpc.aio.ServicerContext[Any, Any]
    ) -> None:
        if not self._keys.enabled:
            return
        presented = presented_key(metadata)
        key = self._keys.find(presented) if presented else None
        if key is None:
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or unknown API key")
            return
        user_id = user_id_of(request)
        if not key.allows_rpc(method, user_id is not None):
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, f"key {key.name!r} may not call {method}")
        if user_id is not None and not key.allows_user(user_id):
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, f"key {key.name!r} may not use this user id")
