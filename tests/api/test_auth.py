"""API keys: every RPC refused without a key, with a wrong one or out of namespace, before any database work.

The pool's request counter shows no connection was taken; keys rotate by rewriting the file, without a restart.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import grpc
import pytest
import pytest_asyncio
from google.protobuf import message_factory
from grpc_health.v1 import health_pb2, health_pb2_grpc
from npc_memory.config import Config
from npc_memory.config.server import ServerConfig
from npc_memory.engine import MemoryEngine
from npc_memory.errors import ConfigError
from npc_memory.ops.keys import KeyRing, hash_key
from npc_memory.server import bind_host, create_server
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc

GAME_A_KEY = "game-a-" + "k" * 40
ADMIN_KEY = "admin-" + "a" * 40
SEARCH_ONLY_KEY = "search-" + "s" * 40
METHODS = list(svc.DESCRIPTOR.services_by_name["MemoryService"].methods)


def keys_toml(*entries: tuple[str, str, str, bool, str]) -> str:
    """A keys file: (name, key, namespace, admin, rpcs) per entry."""
    out = []
    for name, key, namespace, admin, rpcs in entries:
        out.append(f'[[keys]]\nname = "{name}"\nsha256 = "{hash_key(key)}"\nuser_namespaces = ["{namespace}"]\n'
                   f"admin = {str(admin).lower()}\nrpcs = [{rpcs}]\n")
    return "\n".join(out)


@pytest.fixture
def keys_file(tmp_path: Path) -> Path:
    """A keys file with a game-a key, an admin key and a key for SearchMemories only."""
    path = tmp_path / "keys.toml"
    path.write_text(keys_toml(("game-a", GAME_A_KEY, "game-a:*", False, '"*"'),
                              ("ops", ADMIN_KEY, "*", True, '"*"'),
                              ("search", SEARCH_ONLY_KEY, "game-a:*", False, '"SearchMemories"')))
    return path


@pytest_asyncio.fixture
async def channel(engine: MemoryEngine, keys_file: Path) -> AsyncIterator[grpc.aio.Channel]:
    """A channel to a server guarded by the keys file."""
    server, port, health = await create_server(engine, "127.0.0.1:0", keys=KeyRing(path=keys_file))
    await server.start()
    await health.set("", health_pb2.HealthCheckResponse.SERVING)
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as ch:
        yield ch
    await server.stop(0)


def rewrite(path: Path, text: str) -> None:
    """Replace the file's text and move its mtime on by a second (coarse file systems)."""
    stat = path.stat()
    path.write_text(text)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))


def request_for(method: Any, user_id: str) -> Any:
    """The method's request naming the player (``user_id`` or ``scope``), other fields left empty."""
    request: Any = message_factory.GetMessageClass(method.input_type)()
    fields = request.DESCRIPTOR.fields_by_name
    if "user_id" in fields:
        request.user_id = user_id
    if "scope" in fields:
        request.scope.user_id = user_id
        request.scope.heroine_id = "letia"
    return request


async def call(channel: grpc.aio.Channel, method: Any, request: Any, key: str | None) -> grpc.StatusCode:
    """Call one RPC by its descriptor; return the status code."""
    output = message_factory.GetMessageClass(method.output_type)
    rpc: Any = channel.unary_unary(f"/{method.containing_service.full_name}/{method.name}",
                              request_serializer=lambda m: m.SerializeToString(),
                              response_deserializer=output.FromString)
    metadata = (("authorization", f"Bearer {key}"),) if key else ()
    try:
        await rpc(request, metadata=metadata, timeout=10)
    except grpc.aio.AioRpcError as exc:
        return exc.code()
    return grpc.StatusCode.OK


def db_requests(engine: MemoryEngine) -> int:
    """How many connections the pool has handed out so far."""
    return engine.db.stats().get("requests_num", 0)


@pytest.mark.parametrize("method", METHODS, ids=lambda m: m.name)
async def test_every_rpc_refuses_before_the_database(
    channel: grpc.aio.Channel, engine: MemoryEngine, method: Any
) -> None:
    """No key, a wrong key, or a user outside the key's namespace is refused with no connection taken."""
    before = db_requests(engine)
    no_key = await call(channel, method, request_for(method, "game-a:p1"), None)
    wrong_key = await call(channel, method, request_for(method, "game-a:p1"), "not-a-key-" + "x" * 30)
    bearer_of_other_game = await call(channel, method, request_for(method, "game-b:p1"), GAME_A_KEY)
    assert no_key == grpc.StatusCode.UNAUTHENTICATED
    assert wrong_key == grpc.StatusCode.UNAUTHENTICATED
    assert bearer_of_other_game == grpc.StatusCode.PERMISSION_DENIED
    if method.name != "SearchMemories":  # a key limited to SearchMemories may call nothing else
        search_only = await call(channel, method, request_for(method, "game-a:p1"), SEARCH_ONLY_KEY)
        assert search_only == grpc.StatusCode.PERMISSION_DENIED
    assert db_requests(engine) == before


async def test_admin_rpcs_need_an_admin_key(channel: grpc.aio.Channel) -> None:
    """ForgetPlayer is refused to a key that may call every RPC of its game, and allowed to the admin key."""
    forget = METHODS[[m.name for m in METHODS].index("ForgetPlayer")]
    player = "game-a:forget-" + os.urandom(4).hex()
    assert await call(channel, forget, request_for(forget, player), GAME_A_KEY) == grpc.StatusCode.PERMISSION_DENIED
    assert await call(channel, forget, request_for(forget, player), ADMIN_KEY) == grpc.StatusCode.OK


async def test_an_allowed_call_reaches_the_database(channel: grpc.aio.Channel, engine: MemoryEngine) -> None:
    """The same counter moves for a call the key allows (so the refusal test can fail); x-api-key works too.

    A store, whose write transaction takes a pooled connection (the small reads take the pool's kept one, which
    the counter does not see).
    """
    before = db_requests(engine)
    stub = channel.unary_unary("/npc_memory.v1.MemoryService/StoreMemories",
                               request_serializer=svc.StoreMemoriesRequest.SerializeToString,
                               response_deserializer=svc.StoreMemoriesResponse.FromString)
    request = svc.StoreMemoriesRequest(scope=pb.Scope(user_id="game-a:p2", heroine_id="letia"), memories=[
        pb.MemoryInput(speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, content="고양이를 좋아함")])
    call_ = stub(request, metadata=(("x-api-key", GAME_A_KEY), ("x-request-id", "req-123")))
    await call_
    assert dict(await call_.trailing_metadata())["x-request-id"] == "req-123"
    assert db_requests(engine) > before


async def test_health_stays_open(channel: grpc.aio.Channel) -> None:
    """The health service answers without a key (probes carry none)."""
    reply = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=""))
    assert reply.status == health_pb2.HealthCheckResponse.SERVING


async def test_keys_rotate_without_a_restart(channel: grpc.aio.Channel, keys_file: Path) -> None:
    """Rewriting the keys file replaces the keys for the next call: the old key is refused, the new one works."""
    list_ = METHODS[[m.name for m in METHODS].index("ListMemories")]
    new_key = "rotated-" + "r" * 40
    assert await call(channel, list_, request_for(list_, "game-a:p3"), GAME_A_KEY) == grpc.StatusCode.OK
    rewrite(keys_file, keys_toml(("game-a", new_key, "game-a:*", False, '"*"')))
    assert await call(channel, list_, request_for(list_, "game-a:p3"), GAME_A_KEY) == grpc.StatusCode.UNAUTHENTICATED
    assert await call(channel, list_, request_for(list_, "game-a:p3"), new_key) == grpc.StatusCode.OK


def test_no_keys_binds_localhost_and_keys_bind_everywhere(keys_file: Path) -> None:
    """Without keys and without --host the service listens on localhost only; with keys on every interface."""
    assert bind_host(Config(), KeyRing()) == "localhost"
    assert bind_host(Config(), KeyRing(path=keys_file)) == "[::]"
    assert bind_host(replace(Config(), server=ServerConfig(host="10.0.0.5")), KeyRing()) == "10.0.0.5"


def test_a_malformed_keys_file_refuses_to_start(tmp_path: Path) -> None:
    """A key whose hash is not 64 hex digits is a configuration error at start, naming the entry."""
    path = tmp_path / "bad.toml"
    path.write_text('[[keys]]\nname = "x"\nsha256 = "not-a-hash"\n')
    with pytest.raises(ConfigError, match=r"keys\[0\]"):
        KeyRing(path=path)


@pytest.mark.parametrize("case", ["answered", "no key", "bad field", "bad bytes"])
async def test_the_request_id_comes_back_however_the_call_ends(channel: grpc.aio.Channel, case: str) -> None:
    """The caller's x-request-id is in the trailing metadata of a refused call too, and the refusal's status is intact.

    gRPC's abort replaces the call's trailing metadata with its own when it brings any (a status with details does):
    the interceptor adds the id to it. No initial metadata is sent apart from the answer (a gRPC operation of its own).
    """
    name = "SearchMemories" if case == "bad field" else "ListMemories"
    rpc: Any = channel.unary_unary(f"/npc_memory.v1.MemoryService/{name}", request_serializer=lambda b: b,
                                   response_deserializer=lambda b: b)
    request: Any = svc.SearchMemoriesRequest(limit=100_000) if case == "bad field" else svc.ListMemoriesRequest()
    request.scope.user_id, request.scope.heroine_id = "game-a:rid", "letia"
    body = b"\x0a\xff" if case == "bad bytes" else request.SerializeToString()
    key = {"no key": (), "bad bytes": (("x-api-key", ADMIN_KEY),)}.get(case, (("x-api-key", GAME_A_KEY),))
    rid = f"rid-{case.replace(' ', '-')}"
    call_ = rpc(body, metadata=(*key, ("x-request-id", rid)), timeout=10)
    expected = {"answered": grpc.StatusCode.OK, "no key": grpc.StatusCode.UNAUTHENTICATED}.get(
        case, grpc.StatusCode.INVALID_ARGUMENT)
    assert await call_.code() == expected
    assert dict(await call_.trailing_metadata())["x-request-id"] == rid
    assert "x-request-id" not in dict(await call_.initial_metadata())
    if expected == grpc.StatusCode.INVALID_ARGUMENT:  # the BadRequest details are kept beside the id
        assert "grpc-status-details-bin" in dict(await call_.trailing_metadata())
    if case == "bad field":
        assert "limit" in await call_.details()
