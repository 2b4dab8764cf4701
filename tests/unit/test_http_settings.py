"""The HTTP face's settings: off unless a port is given, from flag, environment or file; CORS origins as a list."""

from __future__ import annotations

from pathlib import Path

import pytest
from npc_memory.cli import build_parser
from npc_memory.config import load_config
from npc_memory.errors import ConfigError


def _flags(*argv: str) -> dict[str, object]:
    return vars(build_parser().parse_args(["serve", *argv]))


def test_the_http_face_is_off_by_default() -> None:
    """No flag, variable or file entry: no HTTP port, no edits, no other origins."""
    config = load_config(_flags(), {})
    assert config.http.port is None
    assert not config.http.enabled
    assert not config.http.allow_edits
    assert config.http.cors_origins == ()


def test_flag_environment_and_file_give_the_port(tmp_path: Path) -> None:
    """--http-port beats NPC_MEMORY_HTTP_PORT beats the file; ``off`` in the environment leaves it off."""
    file = tmp_path / "npc.toml"
    file.write_text('http_port = 9000\nhttp_cors_origins = ["https://game.example/", "https://b.example"]\n')
    assert load_config(_flags("--config", str(file)), {}).http.port == 9000
    assert load_config(_flags("--config", str(file)), {"NPC_MEMORY_HTTP_PORT": "8080"}).http.port == 8080
    flagged = load_config(_flags("--config", str(file), "--http-port", "0"), {"NPC_MEMORY_HTTP_PORT": "8080"})
    assert flagged.http.port == 0
    assert load_config(_flags(), {"NPC_MEMORY_HTTP_PORT": "off"}).http.port is None
    assert load_config(_flags("--config", str(file)), {}).http.cors_origins == (
        "https://game.example", "https://b.example")


def test_environment_origins_and_edits() -> None:
    """Comma-separated origins and a boolean for edits come from the environment."""
    config = load_config(_flags(), {"NPC_MEMORY_HTTP_CORS_ORIGINS": "https://a.example, https://b.example",
                                    "NPC_MEMORY_HTTP_ALLOW_EDITS": "true"})
    assert config.http.cors_origins == ("https://a.example", "https://b.example")
    assert config.http.allow_edits


def test_a_bad_port_is_a_config_error() -> None:
    """An out-of-range or non-numeric HTTP port is refused at start as a ConfigError, not a traceback."""
    with pytest.raises(ConfigError, match="http_port 99999"):
        load_config(_flags(), {"NPC_MEMORY_HTTP_PORT": "99999"})
    with pytest.raises(ConfigError, match="NPC_MEMORY_HTTP_PORT"):
        load_config(_flags(), {"NPC_MEMORY_HTTP_PORT": "eighty"})
