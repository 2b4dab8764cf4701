"""The listener's TLS credentials, re-read from their files when they change (certificate rotation)."""

from __future__ import annotations

import logging
from pathlib import Path

import grpc

from npc_memory.config.server import SecurityConfig
from npc_memory.errors import ConfigError

log = logging.getLogger(__name__)


class _CertificateFiles:
    """Reads the certificate, key and client CA; hands gRPC a new configuration when a file's mtime moves."""

    def __init__(self, cert: Path, key: Path, client_ca: Path | None) -> None:
        self._paths = (cert, key) + ((client_ca,) if client_ca else ())
        self._client_ca = client_ca
        self._stamps = self._mtimes()

    def _mtimes(self) -> tuple[int, ...]:
        return tuple(p.stat().st_mtime_ns for p in self._paths)

    def load(self) -> grpc.ServerCertificateConfiguration:
        """The configuration from the files as they are now."""
        cert, key = self._paths[0].read_bytes(), self._paths[1].read_bytes()
        ca = self._client_ca.read_bytes() if self._client_ca else None
        return grpc.ssl_server_certificate_configuration([(key, cert)], root_certificates=ca)

    def fetch(self) -> grpc.ServerCertificateConfiguration | None:
        """Called by gRPC before each handshake: a new configuration after a change, else None (keep)."""
        try:
            stamps = self._mtimes()
            if stamps == self._stamps:
                return None
            config = self.load()
        except OSError as exc:
            log.warning("TLS files unreadable, keeping the current certificate: %s", exc)
            return None
        self._stamps = stamps
        log.info("TLS certificate reloaded")
        return config


def server_credentials(security: SecurityConfig) -> grpc.ServerCredentials:
    """TLS credentials for the listener (mutual when a client CA is configured)."""
    if security.tls_cert is None or security.tls_key is None:
        raise ConfigError("TLS needs tls_cert and tls_key")
    files = _CertificateFiles(security.tls_cert, security.tls_key, security.tls_client_ca)
    try:
        initial = files.load()
    except OSError as exc:
        raise ConfigError(f"TLS files: {exc}") from exc
    return grpc.dynamic_ssl_server_credentials(  # the stub omits that the fetcher may return None (keep)
        initial, files.fetch,  # type: ignore[arg-type]
        require_client_authentication=security.tls_client_ca is not None,
    )
