"""The server's part of the configuration: where it listens, its limits, keys, TLS and logs (see config.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from npc_memory.errors import ConfigError

EventLoop = Literal["auto", "uvloop", "asyncio"]


@dataclass(frozen=True)
class ServerConfig:
    """Where the gRPC server listens and how it stops."""

    host: str = ""
    """Interface to bind; empty means every interface (``[::]``) when API keys are configured, else localhost."""
    port: int = 50051
    """TCP port; 0 picks a free one."""
    grace_seconds: float = 5.0
    """How long in-flight calls may finish on SIGTERM."""
    workers: int = 1
    """Server processes sharing the port (SO_REUSEPORT), each with its own pool and model."""
    event_loop: EventLoop = "auto"
    """``uvloop`` (libuv; less CPU per call), ``asyncio`` (the standard loop) or ``auto`` (uvloop where installed)."""
    health_interval_seconds: float = 0.5
    """How often the health watcher pings the database and embedder."""
    health_timeout_seconds: float = 0.8
    """How long one ping may take before health says NOT_SERVING; interval + timeout bounds the flip time."""
    max_concurrent_streams: int = 0
    """Calls one HTTP/2 connection may have open at once; 0: no cap, every call is accepted and waits its turn here.

    A cap is sent to the client in the connection's SETTINGS, and calls a client opens before it reads them (a
    burst on a new channel) are refused with RST_STREAM, which the client reports as UNAVAILABLE; open streaming
    calls (health ``Watch``) also count against it, so a cap of N lets N watchers block every other call.
    """
    max_send_message_bytes: int = 16 * 1024 * 1024
    """Largest response the server sends; a larger one fails RESOURCE_EXHAUSTED instead of being buffered."""
    keepalive_seconds: float = 60.0
    """Idle seconds before the server pings a connection to find dead peers."""
    keepalive_timeout_seconds: float = 20.0
    """Seconds a keepalive ping may go unanswered before the connection is closed."""
    max_connection_age_seconds: float = 1800.0
    """A connection is asked to go away after this long, so clients rebalance and nothing is held forever."""
    max_connection_age_grace_seconds: float = 30.0
    """Seconds calls on an aged connection get to finish before it is closed."""

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise ConfigError(f"port {self.port} is outside 0-65535")
        if self.workers < 1:
            raise ConfigError("workers must be at least 1")
        if self.health_interval_seconds <= 0 or self.health_timeout_seconds <= 0:
            raise ConfigError("health_interval and health_timeout must be positive")
        if self.max_concurrent_streams < 0 or self.max_send_message_bytes < 1024:
            raise ConfigError("max_concurrent_streams must be >= 0 (0: no cap) and max_send_message_bytes >= 1024")

    def grpc_options(self) -> list[tuple[str, int]]:
        """These limits as gRPC core channel arguments."""
        ms = 1000
        streams = [("grpc.max_concurrent_streams", self.max_concurrent_streams)] if self.max_concurrent_streams else []
        return [
            ("grpc.so_reuseport", 0),
            *streams,
            ("grpc.max_send_message_length", self.max_send_message_bytes),
            ("grpc.keepalive_time_ms", int(self.keepalive_seconds * ms)),
            ("grpc.keepalive_timeout_ms", int(self.keepalive_timeout_seconds * ms)),
            ("grpc.max_connection_age_ms", int(self.max_connection_age_seconds * ms)),
            ("grpc.max_connection_age_grace_ms", int(self.max_connection_age_grace_seconds * ms)),
        ]


@dataclass(frozen=True)
class SecurityConfig:
    """API keys, TLS and what the logs may show."""

    api_keys_file: Path | None = None
    """TOML file of ``[[keys]]`` (name, sha256, rpcs, user_namespaces, admin); re-read when it changes."""
    tls_cert: Path | None = None
    """PEM certificate chain of the listener; with ``tls_key`` the port speaks TLS only (re-read on change)."""
    tls_key: Path | None = None
    """PEM private key of ``tls_cert``."""
    tls_client_ca: Path | None = None
    """PEM CA bundle; when set, clients must present a certificate it signed (mutual TLS)."""
    metrics_port: int = 0
    """Port of the Prometheus /metrics endpoint; 0 leaves it off (the Kubernetes example uses 9464)."""
    tracing: bool = False
    """Send OpenTelemetry traces over OTLP/HTTP, configured by the standard ``OTEL_*`` variables (ops/tracing.py)."""
    log_json: bool = True
    """JSON lines with request ids; false gives the plain terminal format."""
    log_user_ids: bool = False
    """Debug only: put user ids in the access log (content is never logged)."""

    def __post_init__(self) -> None:
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ConfigError("tls_cert and tls_key go together")
        if self.tls_client_ca is not None and not self.tls:
            raise ConfigError("tls_client_ca (mutual TLS) needs tls_cert and tls_key")

    @property
    def tls(self) -> bool:
        """Whether the listener speaks TLS."""
        return self.tls_cert is not None and self.tls_key is not None
