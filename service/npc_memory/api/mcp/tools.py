"""MCP tools over MemoryService: search, store facts, store a dialogue, build context; the scope is a parameter.

Each tool makes the gRPC call on a channel to the service with the caller's API key (the ``Authorization`` or
``x-api-key`` header of an MCP HTTP request; the configured key on stdio), so the interceptor checks key and
namespace, and the servicer validates, exactly as for a game's own call. A refused call is a tool error naming
the status and the fields at fault, for the model to read and correct.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal

import grpc
from google.protobuf.timestamp_pb2 import Timestamp
from google.rpc import error_details_pb2
from grpc_status import rpc_status
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from npc_memory_client.v1 import context_pb2 as ctx_pb
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc
from pydantic import BaseModel, Field

from npc_memory.api.http.loopback import call_metadata
from npc_memory.api.interceptor import presented_key

CALL_SECONDS = 30.0
"""Deadline of each call a tool makes."""
INSTRUCTIONS = (
    "Long-term memory of a game's heroines (NPCs) about each player. Every call names the scope: user_id (the "
    "player) and heroine_id (who remembers). Before the heroine answers, call build_context with the player's "
    "utterance and put its text in her prompt; to recall something specific, call search_memories. After the "
    "exchange, store the lines as said with store_dialogue, and what is worth remembering as facts with "
    "store_memories (one short fact each, importance 1-10)."
)
KeyOf = Callable[[Context], str]
"""How a tool finds the caller's API key: from the HTTP request's headers, or the key stdio was started with."""


class FactIn(BaseModel):
    """One fact to remember."""

    content: str = Field(description="the fact as one short sentence, in any language")
    importance: int = Field(5, ge=1, le=10, description="1 trivial .. 10 life-changing")
    subject: Literal["user", "heroine", "world"] = Field("user", description="whom the fact is about")
    subject_id: str = Field("", description="the heroine's id when the subject is a heroine")
    speaker: Literal["user", "heroine"] = Field("user", description="who said it")
    content_type: Literal["fact", "preference", "trait", "event", "opinion", "personal", "relationship"] = "fact"
    slot: str = Field("", description="key of what the fact sets (favorite_animal): a newer fact replaces it")
    valid_at: str = Field("", description="when it became true, ISO 8601; empty means now")


class TurnIn(BaseModel):
    """One line of a dialogue, in the order said."""

    speaker: Literal["user", "heroine"] = Field(description="the player (user) or the heroine")
    text: str = Field(description="the line as said, in any language")
    speaker_name: str = Field("", description="the name the game shows for the speaker (optional)")
    said_at: str = Field("", description="when it was said, ISO 8601 with a time zone; empty means now")


def _enum(kind: Any, prefix: str, value: str) -> int:
    return int(kind.Value(prefix + value.upper()))


def _timestamp(field: str, value: str, into: Timestamp) -> None:
    if not value:
        return
    try:
        moment = datetime.fromisoformat(value)
    except ValueError as exc:
        raise ToolError(f"INVALID_ARGUMENT: {field} must be an ISO 8601 date and time") from exc
    if moment.tzinfo is None:
        raise ToolError(f"INVALID_ARGUMENT: {field} needs a time zone (e.g. 2026-05-01T18:30:00+09:00)")
    into.FromDatetime(moment)


def refusal(error: grpc.aio.AioRpcError) -> ToolError:
    """The service's refusal as a tool error: code, message and each field at fault."""
    text = f"{error.code().name}: {error.details() or ''}"
    status = rpc_status.from_call(error)
    for detail in status.details if status else ():
        bad = error_details_pb2.BadRequest()
        if detail.Unpack(bad):
            text += "".join(f"\n- {v.field}: {v.description}" for v in bad.field_violations)
    return ToolError(text)


def _memory(m: pb.Memory) -> dict[str, Any]:
    return {"memory_id": m.memory_id, "content": m.content, "importance": m.importance,
            "tier": pb.Tier.Name(m.tier).removeprefix("TIER_").lower(),
            "subject": pb.Subject.Name(m.subject).removeprefix("SUBJECT_").lower(),
            "valid_at": m.valid_at.ToDatetime().isoformat() + "Z" if m.HasField("valid_at") else None,
            "shared_from": m.shared_from or None}


def _stored(result: pb.StoreResult) -> dict[str, Any]:
    return {"memory_id": result.memory_id,
            "outcome": pb.StoreOutcome.Name(result.outcome).removeprefix("STORE_OUTCOME_").lower()}


def key_from_headers(ctx: Context) -> str:
    """The API key of an MCP HTTP request (``Authorization: Bearer`` or ``x-api-key``)."""
    headers = ctx.headers or {}
    return presented_key({k.lower(): v for k, v in headers.items()})


def build_server(channel: grpc.aio.Channel, key_of: KeyOf) -> MCPServer[Any]:
    """The MCP server with the memory tools, calling the service on ``channel``."""
    stub = svc_grpc.MemoryServiceStub(channel)
    server: MCPServer[Any] = MCPServer(name="npc-memory", instructions=INSTRUCTIONS, log_level="WARNING")

    @server.tool()
    async def search_memories(
        user_id: str, heroine_id: str, query: str, ctx: Context, limit: int = 10, include_shared: bool = False,
        as_of: str = "", now: str = "",
    ) -> dict[str, Any]:
        """What the heroine remembers about a query: the best memories, each with its four scores and the final one."""
        request = svc.SearchMemoriesRequest(scope=pb.Scope(user_id=user_id, heroine_id=heroine_id), query=query,
                                            limit=limit, include_shared=include_shared)
        _timestamp("as_of", as_of, request.as_of)
        _timestamp("now", now, request.now)
        try:
            response = await stub.SearchMemories(request, metadata=call_metadata(key_of(ctx)), timeout=CALL_SECONDS)
        except grpc.aio.AioRpcError as error:
            raise refusal(error) from error
        return {"results": [{**_memory(r.memory), "scores": {
            "recency": r.scores.recency, "importance": r.scores.importance, "relevance": r.scores.relevance,
            "keyword": r.scores.keyword, "final": r.scores.final}} for r in response.results]}

    @server.tool()
    async def store_memories(
        user_id: str, heroine_id: str, memories: list[FactIn], ctx: Context, request_id: str = "",
    ) -> dict[str, Any]:
        """Remember facts in the heroine's memory of the player, atomically; a near-duplicate is not stored twice."""
        request = svc.StoreMemoriesRequest(scope=pb.Scope(user_id=user_id, heroine_id=heroine_id),
                                           request_id=request_id)
        for i, fact in enumerate(memories):
            item = request.memories.add(
                content=fact.content, importance=fact.importance, subject_id=fact.subject_id, slot=fact.slot,
                subject=_enum(pb.Subject, "SUBJECT_", fact.subject),
                speaker=_enum(pb.Speaker, "SPEAKER_", fact.speaker),
                content_type=_enum(pb.ContentType, "CONTENT_TYPE_", fact.content_type))
            _timestamp(f"memories[{i}].valid_at", fact.valid_at, item.valid_at)
        try:
            response = await stub.StoreMemories(request, metadata=call_metadata(key_of(ctx)), timeout=CALL_SECONDS)
        except grpc.aio.AioRpcError as error:
            raise refusal(error) from error
        return {"results": [_stored(r) for r in response.results]}

    @server.tool()
    async def store_dialogue(
        user_id: str, heroine_id: str, dialogue_id: str, turns: list[TurnIn], ctx: Context, extract: bool = False,
        first_position: int = 0,
    ) -> dict[str, Any]:
        """Remember a conversation as it was said: each turn a source memory, linked in order.

        With ``extract`` the server also draws facts from the dialogue in the background (when it has extraction).
        A dialogue sent in parts gives each part's ``first_position`` (the number of turns sent before).
        """
        request = svc.StoreDialogueRequest(scope=pb.Scope(user_id=user_id, heroine_id=heroine_id), extract=extract,
                                           first_position=first_position)
        request.dialogue.dialogue_id = dialogue_id
        for i, turn in enumerate(turns):
            line = request.dialogue.turns.add(speaker=_enum(pb.Speaker, "SPEAKER_", turn.speaker), text=turn.text,
                                              speaker_name=turn.speaker_name)
            _timestamp(f"turns[{i}].said_at", turn.said_at, line.said_at)
        try:
            response = await stub.StoreDialogue(request, metadata=call_metadata(key_of(ctx)), timeout=CALL_SECONDS)
        except grpc.aio.AioRpcError as error:
            raise refusal(error) from error
        answer: dict[str, Any] = {"turns": [_stored(r) for r in response.turns]}
        if response.HasField("job"):
            answer["extraction_job_id"] = response.job.job_id
        return answer

    @server.tool()
    async def build_context(
        user_id: str, heroine_id: str, ctx: Context, utterance: str = "", token_budget: int = 0,
        include_shared: bool = False, language: str = "",
    ) -> dict[str, Any]:
        """The block of memories to put in the heroine's prompt before she answers, within a token budget."""
        request = ctx_pb.BuildContextRequest(scope=pb.Scope(user_id=user_id, heroine_id=heroine_id),
                                             utterance=utterance, token_budget=token_budget,
                                             include_shared=include_shared, language=language)
        try:
            response = await stub.BuildContext(request, metadata=call_metadata(key_of(ctx)), timeout=CALL_SECONDS)
        except grpc.aio.AioRpcError as error:
            raise refusal(error) from error
        return {"text": response.text, "tokens": response.tokens, "token_budget": response.token_budget,
                "token_count_method": response.token_count_method,
                "memory_ids": [i.memory.memory_id for s in response.sections for i in s.items]}

    return server
