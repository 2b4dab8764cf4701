"""What ``serve`` refuses or warns about at start, and the embedder's chunks that let abandoned work stop."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import pytest
from npc_memory.config import Config, load_config
from npc_memory.config.server import SecurityConfig, ServerConfig
from npc_memory.embedding.local import CHUNK_CHARS, chunks
from npc_memory.errors import ConfigError
from npc_memory.ops.keys import ApiKey, KeyRing
from npc_memory.server.serve import bind_host, metrics_address

KEYS = KeyRing([ApiKey("game", "0" * 64)])


def test_extraction_with_embedder_none_is_refused_at_start() -> None:
    """--extraction-url with --embedder none: every job would fail for want of vectors, so start fails instead."""
    with pytest.raises(ConfigError, match="extraction_url needs an embedder"):
        load_config({"extraction_url": "http://127.0.0.1:9/v1", "embedder": "none", "embedding_dim": 8}, {})
    assert load_config({"embedder": "none", "embedding_dim": 8}, {}).extraction.url == ""


@pytest.mark.parametrize("host", ["0.0.0.0", "[::]", "10.1.2.3", ""])  # noqa: S104  (the case under test)
def test_keys_in_clear_on_the_network_are_warned_about(host: str, caplog: pytest.LogCaptureFixture) -> None:
    """API keys without TLS on a non-loopback address (given, or [::] by default with keys): a warning at start."""
    config = replace(Config(), server=ServerConfig(host=host))
    with caplog.at_level(logging.WARNING):
        bound = bind_host(config, KEYS)
    assert bound == (host or "[::]")
    assert any("travel in clear" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1"])
def test_keys_on_loopback_or_with_tls_are_not_warned_about(host: str, caplog: pytest.LogCaptureFixture) -> None:
    """Loopback (behind a TLS proxy, say) or TLS on: no warning about keys in clear."""
    loopback = replace(Config(), server=ServerConfig(host=host))
    tls = replace(Config(), server=ServerConfig(host="0.0.0.0"),  # noqa: S104  (the case under test)
                  security=SecurityConfig(tls_cert=Path("c"), tls_key=Path("k")))
    with caplog.at_level(logging.WARNING):
        bind_host(loopback, KEYS)
        bind_host(tls, KEYS)
    assert not any("travel in clear" in r.getMessage() for r in caplog.records)


def test_metrics_listen_on_the_grpc_interface() -> None:
    """/metrics binds the host gRPC binds (an IPv6 any-address without its brackets)."""
    assert metrics_address("127.0.0.1") == "127.0.0.1"
    assert metrics_address("[::]") == "::"
    assert metrics_address("localhost") == "localhost"


def test_a_long_batch_is_embedded_in_chunks_a_cancel_can_fall_between() -> None:
    """Texts keep their order; no chunk holds more than CHUNK_CHARS unless it is one longer text."""
    texts = [f"{i}" * n for i, n in enumerate([10, 1500, 700, 2500, 100, 1900, 50])]
    parts = [list(c) for c in chunks(texts)]
    assert [t for c in parts for t in c] == texts
    assert all(len(c) == 1 or sum(map(len, c)) <= CHUNK_CHARS for c in parts)
    assert len(parts) > 1
    assert [list(c) for c in chunks(["a", "b"])] == [["a", "b"]]
