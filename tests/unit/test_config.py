"""Configuration: flags over environment over the TOML file over defaults; bad values fail at start."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest
from npc_memory.cli import build_parser
from npc_memory.config import load_config
from npc_memory.domain.model import Weights
from npc_memory.errors import ConfigError


def _flags(*argv: str) -> dict[str, object]:
    return vars(build_parser().parse_args(["serve", *argv]))


def test_defaults_use_the_embedded_server_under_xdg_data_home() -> None:
    """With nothing set: port 50051, no DSN (embedded), data under $XDG_DATA_HOME, the local embedder."""
    config = load_config(_flags(), {"HOME": "/home/p", "XDG_DATA_HOME": "/data"})
    assert config.server.port == 50051
    assert config.database.url is None
    assert config.database.data_dir == Path("/data/npc-memory")
    assert config.embedding.kind == "local"
    assert config.search.weights_for("letia") == Weights(0.10, 0.15, 0.60, 0.15)


def test_flag_beats_environment_beats_file(tmp_path: Path) -> None:
    """The same setting from three places: the flag wins, then NPC_MEMORY_*, then the file."""
    file = tmp_path / "c.toml"
    file.write_text('port = 1111\ndatabase_url = "postgresql://file"\ndata_dir = "/from-file"\n')
    env = {"NPC_MEMORY_CONFIG": str(file), "NPC_MEMORY_PORT": "2222", "NPC_MEMORY_DATABASE_URL": "postgresql://env"}
    config = load_config(_flags("--port", "3333"), env)
    assert config.server.port == 3333
    assert config.database.url == "postgresql://env"
    assert config.database.data_dir == Path("/from-file")


def test_per_heroine_weights_come_from_the_file(tmp_path: Path) -> None:
    """[search.heroines.<id>] sets that heroine's default weights; others keep [search.weights]."""
    file = tmp_path / "c.toml"
    file.write_text(
        "[search.weights]\nrecency = 0.1\nimportance = 0.1\nrelevance = 0.6\nkeyword = 0.2\n"
        "[search.heroines.roco]\nrecency = 0.4\nimportance = 0.1\nrelevance = 0.4\nkeyword = 0.1\n"
    )
    config = load_config(_flags("--config", str(file)), {})
    assert config.search.weights_for("roco") == Weights(0.4, 0.1, 0.4, 0.1)
    assert config.search.weights_for("letia") == Weights(0.1, 0.1, 0.6, 0.2)


def test_recency_half_life_per_heroine(tmp_path: Path) -> None:
    """recency_half_life_days in [search] and [search.heroines.<id>] sets each heroine's decay; default a year."""
    assert load_config(_flags(), {}).search.recency_days_for("letia") == pytest.approx(365 / math.log(2))
    file = tmp_path / "c.toml"
    file.write_text("[search]\nrecency_half_life_days = 14\n[search.heroines.letia]\nrecency_half_life_days = 7\n"
                    "relevance = 0.6\n")
    config = load_config(_flags("--config", str(file)), {})
    assert config.search.recency_days_for("letia") == pytest.approx(7 / math.log(2))
    assert config.search.recency_days_for("roco") == pytest.approx(14 / math.log(2))
    assert config.search.weights_for("letia").relevance == 0.6
    file.write_text("[search.heroines.letia]\nrecency_half_life_days = 0\n")
    with pytest.raises(ConfigError, match="recency_half_life_days"):
        load_config(_flags("--config", str(file)), {})


@pytest.mark.parametrize(
    ("env", "message"),
    [
        pytest.param({"NPC_MEMORY_PORT": "http"}, "NPC_MEMORY_PORT", id="port-not-a-number"),
        pytest.param({"NPC_MEMORY_PORT": "70000"}, "port", id="port-out-of-range"),
        pytest.param({"NPC_MEMORY_EMBEDDER": "bert"}, "NPC_MEMORY_EMBEDDER", id="unknown-embedder"),
        pytest.param({"NPC_MEMORY_EMBEDDER": "none"}, "embedding_dim", id="none-without-dim"),
        pytest.param({"NPC_MEMORY_CONFIG": "/does/not/exist.toml"}, "config file", id="missing-file"),
        pytest.param({"NPC_MEMORY_EXPAND_PER_DEPTH": "0"}, "expand_per_depth", id="expand-per-depth-zero"),
        pytest.param({"NPC_MEMORY_DEEPEN_MIN_RELEVANCE": "1.5"}, "deepen_min_relevance", id="deepen-above-one"),
    ],
)
def test_bad_configuration_is_a_clear_error_at_start(env: dict[str, str], message: str) -> None:
    """A bad value stops the service at start with the setting named, never later in a request."""
    with pytest.raises(ConfigError, match=message):
        load_config(_flags(), env)


def test_link_settings_come_from_the_environment() -> None:
    """ExpandMemory's per-depth maximum and deepen's threshold are read from NPC_MEMORY_* like every setting."""
    config = load_config(_flags(), {"NPC_MEMORY_EXPAND_PER_DEPTH": "3", "NPC_MEMORY_DEEPEN_MIN_RELEVANCE": "0.8"})
    assert (config.search.expand_per_depth, config.search.deepen_min_relevance) == (3, 0.8)


def test_empty_environment_value_means_unset() -> None:
    """NPC_MEMORY_DATABASE_URL='' keeps the embedded default (a common shell idiom), not an empty DSN."""
    assert load_config(_flags(), {"NPC_MEMORY_DATABASE_URL": ""}).database.url is None


def test_text_options_and_period_search_come_from_the_environment() -> None:
    """NPC_MEMORY_TEXT_* switch tokenizer options and NPC_MEMORY_SEARCH_PERIOD the period handling."""
    config = load_config(_flags(), {"NPC_MEMORY_TEXT_QUESTION_WORDS": "true", "NPC_MEMORY_TEXT_HONORIFICS": "on",
                                    "NPC_MEMORY_SEARCH_PERIOD": "candidates"})
    assert config.text.question_words
    assert config.text.honorifics
    assert config.text.stem_latin  # the default
    assert not config.text.function_words
    assert config.text_set
    assert config.search.period_search == "candidates"
    assert not load_config(_flags(), {"NPC_MEMORY_TEXT_QUESTION_WORDS": "false"}).text_set  # query-side only


def test_plan_cache_mode_comes_from_the_environment_and_reaches_the_pool() -> None:
    """NPC_MEMORY_PLAN_CACHE_MODE sets PostgreSQL's plan_cache_mode on the pool's connections; generic by default."""
    assert load_config(_flags(), {}).database.pool().plan_cache_mode == "force_generic_plan"
    config = load_config(_flags(), {"NPC_MEMORY_PLAN_CACHE_MODE": "auto"})
    assert config.database.pool().plan_cache_mode == "auto"


@pytest.mark.parametrize("env", [{"NPC_MEMORY_TEXT_STEM_LATIN": "maybe"}, {"NPC_MEMORY_SEARCH_PERIOD": "always"},
                                 {"NPC_MEMORY_PLAN_CACHE_MODE": "generic"}])
def test_bad_choice_setting_names_the_setting(env: dict[str, str]) -> None:
    """An unreadable option value stops the start with the environment variable named."""
    with pytest.raises(ConfigError, match=next(iter(env))):
        load_config(_flags(), env)
def test_extraction_settings_come_from_the_file_and_environment(tmp_path: Path) -> None:
    """[extraction] sets the endpoint and retries; NPC_MEMORY_EXTRACTION_* beats it; without a URL it is off."""
    assert not load_config(_flags(), {}).extraction.enabled
    file = tmp_path / "c.toml"
    file.write_text('[extraction]\nurl = "http://file/v1"\nmodel = "qwen2.5:7b"\nmax_attempts = 4\n'
                    'heroines = ["letia", "mina"]\n')
    env = {"NPC_MEMORY_CONFIG": str(file), "NPC_MEMORY_EXTRACTION_URL": "http://env/v1"}
    ex = load_config(_flags(), env).extraction
    assert (ex.url, ex.model, ex.max_attempts, ex.heroines) == ("http://env/v1", "qwen2.5:7b", 4, ("letia", "mina"))
    assert ex.enabled
    assert ex.prompt_path.read_text(encoding="utf-8").count("{dialogue}") == 1


def test_extraction_lease_must_outlast_the_call() -> None:
    """A lease shorter than the model call's timeout would let a second worker take a live job: refused."""
    with pytest.raises(ConfigError, match="lease_seconds"):
        load_config(_flags(), {"NPC_MEMORY_EXTRACTION_TIMEOUT_SECONDS": "60",
                               "NPC_MEMORY_EXTRACTION_LEASE_SECONDS": "30"})


def test_event_loop_setting_chooses_the_loop_serve_runs_on() -> None:
    """auto/uvloop give uvloop's loop (installed here), asyncio the standard one; anything else fails at start."""
    import asyncio

    import uvloop
    from npc_memory.ops.loop import loop_factory, run

    assert load_config(_flags(), {}).server.event_loop == "auto"
    assert load_config(_flags("--event-loop", "asyncio"), {}).server.event_loop == "asyncio"
    assert load_config(_flags(), {"NPC_MEMORY_EVENT_LOOP": "uvloop"}).server.event_loop == "uvloop"
    with pytest.raises(ConfigError, match="NPC_MEMORY_EVENT_LOOP"):
        load_config(_flags(), {"NPC_MEMORY_EVENT_LOOP": "trio"})
    assert loop_factory("auto") is uvloop.new_event_loop
    assert loop_factory("asyncio") is asyncio.new_event_loop

    async def loop_type() -> type[asyncio.AbstractEventLoop]:
        return type(asyncio.get_running_loop())

    assert run(loop_type(), "uvloop") is uvloop.Loop
    assert run(loop_type(), "asyncio") is not uvloop.Loop


async def test_the_suite_runs_on_the_loop_serve_runs_on() -> None:
    """The suite's loop factory (conftest): these async tests exercise uvloop, as ``serve`` does by default."""
    import asyncio

    import uvloop

    assert isinstance(asyncio.get_running_loop(), uvloop.Loop)


NAMES_USERS_SET = {
    "api_keys_file", "connect_timeout", "data_dir", "database_url", "deepen_min_relevance",
    "duplicate_threshold", "embedder", "embedding_api_key", "embedding_dim", "embedding_model",
    "embedding_passage_prefix", "embedding_query_prefix", "embedding_spin_count", "embedding_threads",
    "embedding_timeout", "embedding_url", "event_loop", "expand_per_depth", "extraction_api_key",
    "extraction_backoff_max_seconds", "extraction_backoff_seconds", "extraction_lease_seconds",
    "extraction_max_attempts", "extraction_model", "extraction_poll_seconds", "extraction_prompt_path",
    "extraction_timeout_seconds", "extraction_url", "grace_seconds", "health_interval", "health_timeout", "host",
    "http_allow_edits", "http_cors_origins", "http_port", "idempotency_hours", "keepalive_seconds",
    "keepalive_timeout_seconds", "keyword_backend", "log_json", "log_user_ids", "max_batch", "max_concurrent_streams",
    "max_connection_age_grace_seconds", "max_connection_age_seconds", "max_send_message_bytes", "metrics_port",
    "plan_cache_mode", "pool_max", "pool_min", "port", "query_cache_size", "retention_interval_minutes",
    "scope_cache_rows", "search_candidates", "search_period", "text_function_words", "text_honorifics",
    "text_latin_words", "text_question_words", "text_stem_latin", "tls_cert", "tls_client_ca", "tls_key",
    "tokenize_process_min_chars", "tokenize_processes", "workers",
}
"""Settings users set by name before the sections were read by one loader (``NPC_MEMORY_<NAME>``, ``--<name>``)."""


def test_every_name_users_set_is_still_a_setting() -> None:
    """The one loader reads each of them: its section's prefix and field, or the name kept for it."""
    from dataclasses import fields

    from npc_memory.config import SECTIONS

    names = {s.name(f.name) for s in SECTIONS for f in fields(s.cls) if f.name not in s.skip}
    assert NAMES_USERS_SET - names == set()


def test_a_section_table_sets_its_fields_and_the_environment_names_its_section(tmp_path: Path) -> None:
    """``[server] port`` in the file; ``NPC_MEMORY_EXTRACTION_HEROINES`` a list; prefix + field for a new name."""
    file = tmp_path / "c.toml"
    file.write_text('[server]\nport = 4444\n[write]\nmax_batch = 7\n[extraction]\nheroines = ["a", "b"]\n')
    config = load_config(_flags(), {"NPC_MEMORY_CONFIG": str(file), "NPC_MEMORY_SEARCH_CANDIDATES": "40"})
    assert (config.server.port, config.write.max_batch, config.extraction.heroines) == (4444, 7, ("a", "b"))
    assert config.search.candidates == 40
    env = {"NPC_MEMORY_EXTRACTION_HEROINES": "x, y", "NPC_MEMORY_SEARCH_RECENCY_HALF_LIFE_DAYS": "30",
           "NPC_MEMORY_RETENTION_MAX_VALID": "9"}
    config = load_config(_flags(), env)
    assert config.extraction.heroines == ("x", "y")
    assert config.retention.policies.default.max_valid == 9
    assert config.search.recency_half_life_days == 30.0


def test_a_value_that_does_not_parse_names_where_it_came_from(tmp_path: Path) -> None:
    """The environment variable, or the file's key or table, is in the message."""
    with pytest.raises(ConfigError, match="NPC_MEMORY_POOL_MAX"):
        load_config(_flags(), {"NPC_MEMORY_POOL_MAX": "many"})
    file = tmp_path / "c.toml"
    file.write_text('[server]\nworkers = "two"\n')
    with pytest.raises(ConfigError, match=r"\[server\] workers"):
        load_config(_flags("--config", str(file)), {})


def test_every_field_of_every_section_has_a_docstring() -> None:
    """The configuration reference is generated from the fields' docstrings: none may be missing."""
    import ast
    import inspect
    from dataclasses import fields

    from npc_memory.config import SECTIONS

    for section in SECTIONS:
        tree = ast.parse(inspect.getsource(section.cls))
        body = tree.body[0].body  # type: ignore[attr-defined]
        documented = {
            node.target.id for node, after in itertools.pairwise(body)
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
            and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
        }
        missing = {f.name for f in fields(section.cls) if f.name not in section.skip} - documented
        assert missing == set(), (section.table, missing)
