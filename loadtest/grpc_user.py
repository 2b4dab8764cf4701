"""A Locust user for gRPC, in the pattern of Locust's own gRPC example.

grpcio is switched to gevent (``grpc.experimental.gevent.init_gevent``) so a blocking call yields to the other
simulated users instead of stalling the process, and a client interceptor fires one Locust ``request`` event per
RPC with its name, time and response size. A failed RPC is a failed request (with its status code), not a
crashed user.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import grpc
import grpc.experimental.gevent as grpc_gevent
from locust import User
from locust.env import Environment
from locust.exception import LocustError
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc

# Must run before any channel exists: grpc's own threads would otherwise block the gevent hub.
grpc_gevent.init_gevent()


class LocustInterceptor(grpc.UnaryUnaryClientInterceptor):
    """Times each unary call and reports it to Locust as a request named after the RPC."""

    def __init__(self, environment: Environment, context: Callable[[], dict[str, Any]]) -> None:
        self.env = environment
        self.context = context

    def intercept_unary_unary(
        self, continuation: Callable[[grpc.ClientCallDetails, Any], Any],
        client_call_details: grpc.ClientCallDetails, request: Any,
    ) -> Any:
        """Run the call, wait for its result, and fire the request event (failures carry the status code)."""
        name = client_call_details.method.rsplit("/", 1)[-1]
        start = time.perf_counter()
        call = continuation(client_call_details, request)
        exception: Exception | None = None
        length = 0
        response = None
        try:
            response = call.result()
            length = response.ByteSize()
        except grpc.RpcError as exc:
            exception = exc
        self.env.events.request.fire(  # type: ignore[no-untyped-call]
            request_type="grpc",
            name=name,
            response_time=(time.perf_counter() - start) * 1000.0,
            response_length=length,
            response=response,
            context=self.context(),
            exception=exception,
        )
        return call


def _target(host: str) -> str:
    """``grpc://h:p``, ``http://h:p`` or ``h:p`` as a grpc target."""
    return host.split("://", 1)[-1].rstrip("/")


class GrpcUser(User):
    """A Locust user with ``self.stub``: a MemoryService stub on its own channel, reporting every call."""

    abstract = True

    def __init__(self, environment: Environment) -> None:
        super().__init__(environment)
        if not self.host:
            raise LocustError("set the service address with --host 127.0.0.1:50051")
        self._channel = grpc.insecure_channel(_target(self.host))
        channel = grpc.intercept_channel(self._channel, LocustInterceptor(environment, self.context))
        self.stub = svc_grpc.MemoryServiceStub(channel)

    def context(self) -> dict[str, Any]:
        """Extra fields attached to each request event (the scope size, for the benchmark's samples)."""
        return {}

    def on_stop(self) -> None:
        """Close the channel."""
        self._channel.close()
