"""gRPC-Web on the HTTP port: a hand-framed POST over HTTP/1.1 calls MemoryService with the same keys and checks."""

from __future__ import annotations

import base64
import struct
import uuid

import httpx
from google.rpc import error_details_pb2, status_pb2
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc
from web_face import ADMIN, OTHER_KEY, READER_KEY, Face, admin_stub, face

__all__ = ["admin_stub", "face"]  # fixtures used by name

SEARCH = "/npc_memory.v1.MemoryService/SearchMemories"
CAT = "레티아는 플레이어가 고양이를 좋아한다는 것을 기억한다"
SECRET = "다른 플레이어의 비밀: 금고 비밀번호는 4321"


def framed(message: bytes) -> bytes:
    """One uncompressed gRPC-Web message frame."""
    return struct.pack(">BI", 0, len(message)) + message


def unframed(body: bytes) -> tuple[list[bytes], dict[str, str]]:
    """The message frames and the trailer frame's headers of a gRPC-Web response body."""
    messages, trailers, at = [], {}, 0
    while at < len(body):
        flag, size = struct.unpack_from(">BI", body, at)
        payload = body[at + 5:at + 5 + size]
        at += 5 + size
        if flag & 0x80:
            for line in payload.decode().split("\r\n"):
                if line:
                    name, _, value = line.partition(":")
                    trailers[name.strip().lower()] = value.strip()
        else:
            messages.append(payload)
    return messages, trailers


def _search(user_id: str, query: str = "고양이", heroine_id: str = "letia") -> bytes:
    return svc.SearchMemoriesRequest(scope=pb.Scope(user_id=user_id, heroine_id=heroine_id),
                                     query=query).SerializeToString()


async def _post(face: Face, body: bytes, key: str | None, text: bool = False,
                origin: str | None = None) -> httpx.Response:
    kind = "application/grpc-web-text" if text else "application/grpc-web+proto"
    headers = {"content-type": kind, "x-grpc-web": "1", "x-request-id": "web-req-1"}
    if key:
        headers["authorization"] = f"Bearer {key}"
    if origin:
        headers["origin"] = origin
    payload = base64.b64encode(framed(body)) if text else framed(body)
    async with httpx.AsyncClient(http1=True, http2=False, timeout=30) as client:
        return await client.post(face.base + SEARCH, content=payload, headers=headers)


async def _store(stub: svc_grpc.MemoryServiceAsyncStub, user_id: str, content: str) -> None:
    await stub.StoreMemories(svc.StoreMemoriesRequest(
        scope=pb.Scope(user_id=user_id, heroine_id="letia"),
        memories=[pb.MemoryInput(content=content, importance=6, subject=pb.SUBJECT_USER, speaker=pb.SPEAKER_USER,
                                 content_type=pb.CONTENT_TYPE_PREFERENCE)]), metadata=ADMIN)


async def test_a_grpc_web_search_over_http_1_1_returns_the_results(
    face: Face, admin_stub: svc_grpc.MemoryServiceAsyncStub,
) -> None:
    """A binary gRPC-Web POST on HTTP/1.1 answers status 0, the request id, and the scored Korean memory."""
    user_id = f"web-a:g-{uuid.uuid4().hex[:8]}"
    await _store(admin_stub, user_id, CAT)
    response = await _post(face, _search(user_id), READER_KEY)
    assert response.http_version == "HTTP/1.1"
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/grpc-web+proto")
    messages, trailers = unframed(response.content)
    assert trailers["grpc-status"] == "0"
    assert trailers["x-request-id"] == "web-req-1"
    [message] = messages
    answer = svc.SearchMemoriesResponse.FromString(message)
    assert [r.memory.content for r in answer.results] == [CAT]
    assert 0 < answer.results[0].scores.final <= 1
    assert answer.results[0].scores.keyword > 0


async def test_grpc_web_text_is_base64_both_ways(face: Face, admin_stub: svc_grpc.MemoryServiceAsyncStub) -> None:
    """application/grpc-web-text: the request and the answer are base64 of the frames."""
    user_id = f"web-a:g-{uuid.uuid4().hex[:8]}"
    await _store(admin_stub, user_id, CAT)
    response = await _post(face, _search(user_id), READER_KEY, text=True)
    assert response.headers["content-type"].startswith("application/grpc-web-text")
    messages, trailers = unframed(base64.b64decode(response.content))
    assert trailers["grpc-status"] == "0"
    assert svc.SearchMemoriesResponse.FromString(messages[0]).results[0].memory.content == CAT


async def test_grpc_web_keeps_the_key_s_namespace(face: Face, admin_stub: svc_grpc.MemoryServiceAsyncStub) -> None:
    """A web-a key asking for a web-b player gets PERMISSION_DENIED and no message; no key gets UNAUTHENTICATED."""
    theirs = f"web-b:g-{uuid.uuid4().hex[:8]}"
    await _store(admin_stub, theirs, SECRET)
    messages, trailers = unframed((await _post(face, _search(theirs, "비밀번호"), READER_KEY)).content)
    assert trailers["grpc-status"] == "7"
    assert messages == []
    messages, trailers = unframed((await _post(face, _search(theirs, "비밀번호"), None)).content)
    assert trailers["grpc-status"] == "16"
    assert messages == []
    messages, trailers = unframed((await _post(face, _search(theirs, "비밀번호"), OTHER_KEY)).content)
    assert trailers["grpc-status"] == "0"
    assert svc.SearchMemoriesResponse.FromString(messages[0]).results[0].memory.content == SECRET


async def test_grpc_web_bad_input_names_the_field(face: Face) -> None:
    """A bad heroine id answers INVALID_ARGUMENT with the google.rpc.BadRequest naming scope.heroine_id."""
    response = await _post(face, _search("web-a:bad", heroine_id="Not A Heroine!"), READER_KEY)
    _messages, trailers = unframed(response.content)
    assert trailers["grpc-status"] == "3"
    status = status_pb2.Status.FromString(base64.b64decode(trailers["grpc-status-details-bin"] + "=="))
    bad = error_details_pb2.BadRequest()
    assert status.details[0].Unpack(bad)
    assert [v.field for v in bad.field_violations] == ["scope.heroine_id"]


async def test_a_cut_frame_is_invalid_argument_not_internal(face: Face) -> None:
    """A body whose frame is cut short answers INVALID_ARGUMENT from the HTTP face itself."""
    async with httpx.AsyncClient(timeout=30) as client:
        response = await client.post(face.base + SEARCH, content=b"\x00\x00\x00\x00\x09abc",
                                     headers={"content-type": "application/grpc-web+proto",
                                              "authorization": f"Bearer {READER_KEY}"})
    _messages, trailers = unframed(response.content)
    assert trailers["grpc-status"] == "3"


async def test_cors_allows_the_configured_origin_only(face: Face) -> None:
    """A preflight from the configured origin is allowed with the gRPC-Web headers; another origin is not."""
    async with httpx.AsyncClient(timeout=30) as client:
        allowed = await client.options(face.base + SEARCH, headers={
            "origin": "http://game.example", "access-control-request-method": "POST",
            "access-control-request-headers": "content-type,x-grpc-web,authorization"})
        refused = await client.options(face.base + SEARCH, headers={
            "origin": "http://elsewhere.example", "access-control-request-method": "POST",
            "access-control-request-headers": "content-type,x-grpc-web,authorization"})
    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == "http://game.example"
    assert "authorization" in allowed.headers["access-control-allow-headers"].lower()
    assert refused.status_code == 400
    assert "access-control-allow-origin" not in refused.headers
    response = await _post(face, _search("web-a:nobody"), READER_KEY, origin="http://game.example")
    assert response.headers["access-control-allow-origin"] == "http://game.example"
    assert "grpc-status" in response.headers["access-control-expose-headers"].lower()
