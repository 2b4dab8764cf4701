"""Property fuzz of every RPC: never INTERNAL/UNKNOWN, violations name real fields, a rejected request writes nothing.

Each RPC gets a valid base request with one or two fields replaced by hostile values (NaN, infinities,
subnormals, NUL, newlines, 2,000+ characters, out-of-range enums and timestamps, deep or non-finite metadata),
requests built from nothing but random field values, and random bytes. Values are drawn from the request's
own descriptor, so a field added to the proto is fuzzed without a change here. Bounded (a few hundred
examples, derandomized for CI) and run against the same real PostgreSQL and gRPC server as the other tests.
"""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import grpc
import psycopg
import pytest
import pytest_asyncio
from bad_request import violations
from google.protobuf import descriptor, field_mask_pb2, struct_pb2, timestamp_pb2
from google.protobuf.message import DecodeError, Message
from google.protobuf.message_factory import GetMessageClass
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from npc_memory.engine import MemoryEngine
from npc_memory_client.v1 import context_pb2 as ctx_pb
from npc_memory_client.v1 import extraction_pb2 as ex_pb
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc

if TYPE_CHECKING:
    from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc

    Stub = svc_grpc.MemoryServiceAsyncStub

SERVICE = svc.DESCRIPTOR.services_by_name["MemoryService"]
FD = descriptor.FieldDescriptor
# Codes a healthy server may answer to any input. INTERNAL/UNKNOWN are bugs; UNAVAILABLE or RESOURCE_EXHAUSTED
# with the database up mean input reached PostgreSQL that it refused, or an answer too big for the client.
ALLOWED = {grpc.StatusCode.OK, grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND,
           grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.ABORTED}
FUZZ = settings(max_examples=50, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SNAPSHOT = """
SELECT (SELECT count(*) FROM user_memories), (SELECT count(*) FROM store_requests),
       (SELECT max(updated_at) FROM user_memories), (SELECT count(*) FROM user_memories WHERE invalid_at IS NOT NULL)
"""
PATH_SEGMENT = re.compile(r"([a-z_]+)(?:\[(\d+)\])?")

# --- hostile values, by field type -------------------------------------------------------------------------



def _mostly(curated: list[Any], anything: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Two draws in three from the values known to hurt, one from anywhere (derandomized runs are short)."""
    known = st.sampled_from(curated)
    return st.one_of(known, known, anything)


_STRINGS = _mostly(
    ["", " ", "a\x00b", "\x00", "letia\n", "user\n", "\n", "🙂🙂", "../..", "' OR 1=1 --", "\t", "é" * 300, "user",
     "world", "letia", str(uuid.UUID(int=1)), "{" + str(uuid.UUID(int=2)) + "}", "한" * 2000, "한" * 2001,
     "🙂" * 129],
    st.text(max_size=40),
)
_INT32 = _mostly([-1, 0, 1, 5, 10, 11, 100, 101, 500, 501, 2**31 - 1, -(2**31)], st.integers(-(2**31), 2**31 - 1))
_DOUBLES = _mostly([math.nan, math.inf, -math.inf, 1e308, -1e308, 5e-324, -0.0, 1e20, 1e6, 1e-6, 1e-7], st.floats())
_FLOATS = _mostly([math.nan, math.inf, -math.inf, 3.4e38, 1e20, 1e-45, 0.0, -1.0], st.floats(width=32))
# Accepted times span years 1-9999 (recency is total over the whole calendar); out-of-range ones are kept too.
_SECONDS = st.one_of(st.integers(-62_135_596_800, 253_402_300_799), st.integers(-(2**62), -62_135_596_801),
                     st.integers(253_402_300_800, 2**62))
_TIMESTAMPS = st.builds(
    lambda s, n: timestamp_pb2.Timestamp(seconds=s, nanos=n),
    _SECONDS, _mostly([0, 999_999_999], st.integers(-(2**31), 2**31 - 1)),
)
_JSON_LEAVES = st.one_of(st.none(), st.booleans(), _DOUBLES, _STRINGS)
_JSON = st.recursive(_JSON_LEAVES, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(_STRINGS, inner, max_size=3)), max_leaves=8)


def _struct(data: dict[str, Any]) -> struct_pb2.Struct:
    out = struct_pb2.Struct()
    out.update(data)
    return out


_STRUCTS = st.dictionaries(_STRINGS, _JSON, max_size=4).map(_struct)
_MASKS = st.lists(st.one_of(st.sampled_from(["importance", "tier", "metadata", "content", "valid_at", "id"]),
                            _STRINGS), max_size=4).map(lambda p: field_mask_pb2.FieldMask(paths=p))
# Weights as a whole: one hostile value in all four is what overflows a sum (1e308 x 4).
_WEIGHTS = st.one_of(
    st.builds(pb.Weights, recency=_DOUBLES, importance=_DOUBLES, relevance=_DOUBLES, keyword=_DOUBLES),
    _DOUBLES.map(lambda v: pb.Weights(recency=v, importance=v, relevance=v, keyword=v)),
)
_MESSAGES = {"google.protobuf.Timestamp": _TIMESTAMPS, "google.protobuf.Struct": _STRUCTS,
             "google.protobuf.FieldMask": _MASKS, pb.Weights.DESCRIPTOR.full_name: _WEIGHTS}


def _scalar(field: FD) -> st.SearchStrategy[Any]:
    return {
        FD.TYPE_STRING: _STRINGS, FD.TYPE_INT32: _INT32, FD.TYPE_ENUM: _INT32, FD.TYPE_DOUBLE: _DOUBLES,
        FD.TYPE_FLOAT: _FLOATS, FD.TYPE_BOOL: st.booleans(), FD.TYPE_INT64: st.integers(-(2**63), 2**63 - 1),
    }[field.type]


def _message_name(field: FD) -> str | None:
    """The full name of a message field's type; None for a scalar."""
    return field.message_type.full_name if field.type == FD.TYPE_MESSAGE and field.message_type else None


def _value(field: FD, dim: int) -> st.SearchStrategy[Any]:
    """Hostile values for one field: a scalar, a list, or a well-known message."""
    name = _message_name(field)
    if name is not None:
        return _MESSAGES[name]
    if not field.is_repeated:
        return _scalar(field)
    lists = st.lists(_scalar(field), max_size=5)
    if field.type == FD.TYPE_FLOAT:  # an embedding of the server's size, every value the same extreme
        return st.one_of(lists, _FLOATS.map(lambda v: [v] * dim))
    return lists


# --- field paths from the descriptor ------------------------------------------------------------------------

Path = tuple[str, ...]


def _leaves(desc: descriptor.Descriptor, prefix: Path = ()) -> list[tuple[Path, FD]]:
    """Every settable leaf of a request: scalars, lists and well-known messages, into nested messages."""
    out: list[tuple[Path, FD]] = []
    for field in desc.fields:
        path = (*prefix, field.name)
        name = _message_name(field)
        if name is not None and name not in _MESSAGES and field.message_type is not None:
            out += _leaves(field.message_type, path)  # repeated messages: their first element
        else:
            out.append((path, field))
    return out


def _set(message: Message, path: Path, value: Any) -> None:
    """Set a leaf, creating the messages on the way (the first element of a repeated message field)."""
    for name in path[:-1]:
        field = message.DESCRIPTOR.fields_by_name[name]
        if field.is_repeated:
            container = getattr(message, name)
            message = container[0] if len(container) else container.add()
        else:
            message = getattr(message, name)
    target = message.DESCRIPTOR.fields_by_name[path[-1]]
    if target.is_repeated:
        getattr(message, path[-1])[:] = value
    elif target.type == FD.TYPE_MESSAGE:
        getattr(message, path[-1]).CopyFrom(value)
    else:
        setattr(message, path[-1], value)


def _resolves(message: Message, path: str) -> bool:
    """Whether a BadRequest field path names a field of ``message`` (and an index that exists in it)."""
    current: Any = message
    for segment in path.split("."):
        match = PATH_SEGMENT.fullmatch(segment)
        if match is None or not isinstance(current, Message):
            return False
        name, index = match.group(1), match.group(2)
        field = current.DESCRIPTOR.fields_by_name.get(name)
        if field is None:
            return False
        current = getattr(current, name)
        if index is not None:
            if not field.is_repeated or int(index) >= len(current):
                return False
            current = current[int(index)]
    return True


# --- the server ---------------------------------------------------------------------------------------------


@dataclass
class Fuzz:
    """The live server, a raw channel, a scope with stored facts, and a way to see whether anything was written."""

    stub: Stub
    channel: grpc.aio.Channel
    conn: psycopg.AsyncConnection[Any]
    scope: pb.Scope
    memory_ids: list[str]
    dim: int

    async def snapshot(self) -> tuple[Any, ...]:
        """Counts and the newest update over the whole database: a rejected request must change none of them."""
        cur = await self.conn.execute(SNAPSHOT)
        row = await cur.fetchone()
        assert row is not None
        return tuple(row)

    def base(self, method: str) -> Message:
        """A valid request of ``method`` on the fuzz scope."""
        scope, memory_id = self.scope, self.memory_ids[0]
        fact = pb.MemoryInput(speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, content="퍼즈 사실: 바다를 좋아함",
                              importance=5, slot="fuzz_slot", metadata=_struct({"k": "v"}))
        builders: dict[str, Callable[[], Message]] = {
            "StoreMemories": lambda: svc.StoreMemoriesRequest(scope=scope, memories=[fact], request_id=""),
            "StoreDialogue": lambda: svc.StoreDialogueRequest(scope=scope, dialogue=ex_pb.Dialogue(
                dialogue_id=f"fuzz-{uuid.uuid4().hex[:8]}", turns=[ex_pb.DialogueTurn(
                    speaker=pb.SPEAKER_USER, text="바다 보러 가자", speaker_name="민수")])),
            "SearchMemories": lambda: svc.SearchMemoriesRequest(
                scope=scope, query="바다", limit=5, weights=pb.Weights(recency=0.2, importance=0.2, relevance=0.4,
                                                                     keyword=0.2),
                filter=pb.MemoryFilter(subject_ids=["user"], min_importance=1)),
            "GetMemory": lambda: svc.GetMemoryRequest(scope=scope, memory_id=memory_id),
            "ListMemories": lambda: svc.ListMemoriesRequest(scope=scope, page_size=10),
            "InvalidateMemory": lambda: svc.InvalidateMemoryRequest(scope=scope, memory_id=self.memory_ids[-1]),
            "UpdateMemory": lambda: svc.UpdateMemoryRequest(
                scope=scope, memory_id=memory_id, importance=7,
                update_mask=field_mask_pb2.FieldMask(paths=["importance"])),
            "GetMemoryHistory": lambda: svc.GetMemoryHistoryRequest(scope=scope, subject_id="user", slot="fuzz_slot",
                                                                    page_size=10),
            "ForgetPlayer": lambda: svc.ForgetPlayerRequest(user_id=f"fuzz-forget-{uuid.uuid4().hex[:8]}"),
            "ExpandMemory": lambda: svc.ExpandMemoryRequest(scope=scope, memory_id=memory_id),
            "ListLinks": lambda: svc.ListLinksRequest(scope=scope, memory_id=memory_id),
            # Save operations on players of their own, so the fuzz scope's timeline never moves under the checks.
            "CreateSavePoint": lambda: svc.CreateSavePointRequest(user_id=f"fuzz-save-{uuid.uuid4().hex[:8]}",
                                                                  save_id="slot-1"),
            "LoadSavePoint": lambda: svc.LoadSavePointRequest(user_id=f"fuzz-save-{uuid.uuid4().hex[:8]}",
                                                              save_id="slot-1"),
            "ListSavePoints": lambda: svc.ListSavePointsRequest(user_id=scope.user_id),
            "DropTimeline": lambda: svc.DropTimelineRequest(user_id=f"fuzz-save-{uuid.uuid4().hex[:8]}",
                                                            timeline_id=2),
            # The fuzz server has no chat model: a valid request is refused (FAILED_PRECONDITION) before any write.
            "ExtractMemories": lambda: ex_pb.ExtractMemoriesRequest(scope=scope, dialogue=ex_pb.Dialogue(
                dialogue_id="fuzz-dialogue", turns=[ex_pb.DialogueTurn(speaker=pb.SPEAKER_USER, text="바다")])),
            "GetExtractionJob": lambda: ex_pb.GetExtractionJobRequest(user_id=scope.user_id, job_id=str(uuid.uuid4())),
            "BuildContext": lambda: ctx_pb.BuildContextRequest(scope=scope, utterance="바다", token_budget=200,
                                                               include_shared=True),
        }
        return builders[method]()

    async def call(self, method: str, payload: bytes) -> tuple[grpc.StatusCode, grpc.aio.AioRpcError | None]:
        """Send raw request bytes; the status code and, on failure, the error."""
        rpc: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = self.channel.unary_unary(
            f"/{SERVICE.full_name}/{method}", request_serializer=None, response_deserializer=None
        )
        try:
            await rpc(payload, timeout=60)
        except grpc.aio.AioRpcError as err:
            return err.code(), err
        return grpc.StatusCode.OK, None

    async def check(self, method: str, payload: bytes, request: Message | None) -> None:
        """The properties: an allowed code; violations that name fields of the request; rejects write nothing."""
        before = await self.snapshot()
        code, err = await self.call(method, payload)
        assert code in ALLOWED, (method, code, err.details() if err else "", request)
        if err is None:
            return
        assert await self.snapshot() == before, (method, code, "a rejected request wrote", request)
        if code != grpc.StatusCode.INVALID_ARGUMENT:
            return
        found = violations(err)
        assert found, (method, "INVALID_ARGUMENT without a BadRequest", err.details())
        for path in found:
            if request is None:
                assert path == "", (method, path)  # undecodable: the whole request
            else:
                assert _resolves(request, path), (method, path, request)


@pytest_asyncio.fixture(scope="module")
async def fuzz(stub: Stub, server_port: int, database_url: str, engine: MemoryEngine) -> AsyncIterator[Fuzz]:
    """A fuzz scope holding a few facts, a raw channel and a database connection for snapshots."""
    scope = pb.Scope(user_id=f"fuzz-{uuid.uuid4().hex[:10]}", heroine_id="letia")
    stored = await stub.StoreMemories(svc.StoreMemoriesRequest(scope=scope, memories=[
        pb.MemoryInput(speaker=pb.SPEAKER_USER, subject=pb.SUBJECT_USER, content=c, slot=s)
        for c, s in (("바다를 좋아함", "fuzz_slot"), ("고양이를 키움", ""), ("비 오는 날을 싫어함", ""))
    ]))
    async with (
        grpc.aio.insecure_channel(f"127.0.0.1:{server_port}") as channel,
        await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn,
    ):
        yield Fuzz(stub, channel, conn, scope, [r.memory_id for r in stored.results], engine.embedder.dim)


METHODS = [m.name for m in SERVICE.methods]
REQUEST_TYPES: dict[str, type[Message]] = {m.name: GetMessageClass(m.input_type) for m in SERVICE.methods}


def _mutations(method: str, dim: int, most: int) -> st.SearchStrategy[list[tuple[Path, Any]]]:
    leaves = _leaves(SERVICE.methods_by_name[method].input_type)
    one = st.sampled_from(leaves).flatmap(lambda leaf: st.tuples(st.just(leaf[0]), _value(leaf[1], dim)))
    return st.lists(one, min_size=1, max_size=most)


@pytest.mark.parametrize("method", METHODS)
@FUZZ
@given(data=st.data())
async def test_a_valid_request_with_hostile_fields_is_answered_properly(fuzz: Fuzz, method: str, data: Any) -> None:
    """One or two fields of a valid request replaced by hostile values: properties hold (see module docstring)."""
    request = fuzz.base(method)
    for path, value in data.draw(_mutations(method, fuzz.dim, 2)):
        _set(request, path, value)
    await fuzz.check(method, request.SerializeToString(), request)


@pytest.mark.parametrize("method", METHODS)
@settings(FUZZ, max_examples=15)
@given(data=st.data())
async def test_a_request_of_random_fields_is_answered_properly(fuzz: Fuzz, method: str, data: Any) -> None:
    """A request built from one to six random field values and nothing else: the same properties."""
    request = REQUEST_TYPES[method]()
    for path, value in data.draw(_mutations(method, fuzz.dim, 6)):
        _set(request, path, value)
    await fuzz.check(method, request.SerializeToString(), request)


@settings(FUZZ, max_examples=60)
@given(method=st.sampled_from(METHODS), payload=st.binary(max_size=120))
async def test_random_bytes_are_answered_properly(fuzz: Fuzz, method: str, payload: bytes) -> None:
    """Random bytes as a request: decoded or not, the same properties (an undecodable one names the request)."""
    try:
        request: Message | None = REQUEST_TYPES[method].FromString(payload)
    except DecodeError:
        request = None
    await fuzz.check(method, payload, request)
