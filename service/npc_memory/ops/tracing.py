"""Opt-in OpenTelemetry traces: a span per RPC, and inside it the model call, the database reads and the write.

Off unless ``SecurityConfig.tracing`` (``serve --tracing``) is set; then the standard ``OTEL_*`` variables
configure the exporter (OTLP over HTTP: ``OTEL_EXPORTER_OTLP_ENDPOINT`` …), the service name and the sampler, as the
OpenTelemetry SDK reads them. While off, ``span`` hands back one shared no-op context and nothing of OpenTelemetry
is imported. Spans carry names, ids and counts only: never a memory's content, a query or any text of a player.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import grpc
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Span, Tracer

SERVICE_NAME = "npc-memory"
"""The resource's ``service.name`` unless ``OTEL_SERVICE_NAME`` says otherwise."""

_OFF: AbstractContextManager[None] = contextlib.nullcontext()
_tracer: Tracer | None = None
_current: Callable[[], Span] | None = None


def span(name: str, **attributes: int | str) -> AbstractContextManager[Any]:
    """A child of the current call's span while tracing is on; else a shared no-op context (no allocation).

    Only a child: work outside a call (the health watcher's pings, the background worker) makes no root spans.
    """
    if _tracer is None or _current is None or not _current().is_recording():
        return _OFF
    return _traced(_tracer, name, attributes)


@contextlib.contextmanager
def _traced(tracer: Tracer, name: str, attributes: dict[str, int | str]) -> Iterator[Span]:
    """A span whose failure says only the exception's type: a message may quote what a player wrote."""
    from opentelemetry.trace import Status, StatusCode

    with tracer.start_as_current_span(name, attributes=attributes, record_exception=False,
                                      set_status_on_exception=False) as current:
        try:
            yield current
        except BaseException as exc:
            current.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            raise


def provider() -> TracerProvider:
    """A tracer provider exporting in batches over OTLP/HTTP, configured by the ``OTEL_*`` environment variables."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import OTELResourceDetector, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    # OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over the default name.
    resource = Resource.create({"service.name": SERVICE_NAME}).merge(OTELResourceDetector().detect())
    made = TracerProvider(resource=resource)
    made.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return made


def server_interceptor(traces: TracerProvider, service: str) -> grpc.aio.ServerInterceptor:
    """The OpenTelemetry gRPC interceptor: one SERVER span per call of ``service`` (method, status, peer; no payload).

    Health checks and reflection are left out: a probe every few seconds would bury the calls that matter.
    """
    from opentelemetry.instrumentation.grpc import aio_server_interceptor, filters

    # The package has no type hints: its one function is typed here.
    interceptor: grpc.aio.ServerInterceptor = aio_server_interceptor(  # type: ignore[no-untyped-call]
        tracer_provider=traces, filter_=filters.service_name(service))
    return interceptor


@contextlib.asynccontextmanager
async def tracing(traces: TracerProvider | None) -> AsyncIterator[None]:
    """Spans of this process go to ``traces`` inside the block (None: tracing stays off); flushed and shut after."""
    global _tracer, _current  # noqa: PLW0603 - one switch read on every span, set once by serve
    if traces is None:
        yield
        return
    from opentelemetry.trace import get_current_span

    _tracer, _current = traces.get_tracer("npc_memory"), get_current_span
    try:
        yield
    finally:
        _tracer = _current = None
        await asyncio.to_thread(traces.shutdown)  # the last batch goes out over HTTP
