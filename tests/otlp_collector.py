"""A real OTLP/HTTP trace receiver in the test process: it decodes what the service's exporter sends.

It stands in for an OpenTelemetry Collector: a real socket and real HTTP, the body decoded as the protocol's
``ExportTraceServiceRequest``. The spans it receives are kept for the test to read.
"""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.trace.v1 import trace_pb2


@dataclass
class Collector:
    """The receiver's state: its base URL and every span received, with the resource it came from."""

    url: str = ""
    spans: list[tuple[dict[str, str], trace_pb2.Span]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def received(self) -> list[trace_pb2.Span]:
        """The spans received so far."""
        with self.lock:
            return [s for _, s in self.spans]


def _handler(state: Collector) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the test reads what arrived, not the access log."""

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            if self.path != "/v1/traces" or self.headers.get("Content-Type") != "application/x-protobuf":
                self.send_response(404)
                self.end_headers()
                return
            request = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
            with state.lock:
                for resource in request.resource_spans:
                    attributes = {a.key: a.value.string_value for a in resource.resource.attributes}
                    for scope in resource.scope_spans:
                        state.spans.extend((attributes, s) for s in scope.spans)
            answer = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

    return Handler


def serve_collector() -> Iterator[Collector]:
    """Run a receiver on a free local port for the duration of the generator."""
    state = Collector()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
