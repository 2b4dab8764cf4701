"""Registers MemoryService with request decoding inside our error handling: bad bytes are INVALID_ARGUMENT.

With the generated registration, grpc decodes the request before our code runs, and a DecodeError there is
answered UNKNOWN with grpc's own text ("Unexpected <class 'google.protobuf.message.DecodeError'>..."). Here
grpc hands over the raw bytes and the handler parses them, so a request that is not the message is answered
INVALID_ARGUMENT with a BadRequest whose empty field path names the whole request.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import grpc
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import DecodeError, Message
from google.protobuf.message_factory import GetMessageClass
from grpc_status import rpc_status
from npc_memory_client.v1 import memory_service_pb2 as svc

from npc_memory.api.errors import to_status
from npc_memory.errors import InvalidArgumentError

SERVICE = svc.DESCRIPTOR.services_by_name["MemoryService"]
WHOLE_REQUEST = ""
"""The BadRequest field path of a violation about the request as a whole."""



def message_class(descriptor: Descriptor) -> type[Message]:
    """The generated class of a request or response (some live in extraction_pb2 and context_pb2, not svc)."""
    return GetMessageClass(descriptor)


Behaviour = Callable[[Any, grpc.aio.ServicerContext[Any, Any]], Awaitable[Message]]


def decode_error(message_type: str, exc: DecodeError) -> InvalidArgumentError:
    """The error for request bytes that do not parse as ``message_type``."""
    reason = str(exc).rsplit(": ", 1)[-1]  # protobuf's own words ("Wire format was corrupt"), no Python names
    return InvalidArgumentError.single(WHOLE_REQUEST, f"the request is not a valid {message_type} ({reason})")


def _decoding(behaviour: Behaviour, request_type: type[Message]) -> Behaviour:
    full_name = request_type.DESCRIPTOR.full_name

    async def handle(raw: bytes | Message, context: grpc.aio.ServicerContext[Any, Any]) -> Message:
        if isinstance(raw, Message):  # already decoded by the interceptor, which needed the user id
            return await behaviour(raw, context)
        try:
            request = request_type.FromString(raw)
        except DecodeError as exc:
            await context.abort_with_status(rpc_status.to_status(to_status(decode_error(full_name, exc))))
            raise  # abort_with_status raises; this line only satisfies the type checker
        return await behaviour(request, context)

    return handle


def decoded(method: str, raw: bytes) -> Message | bytes:
    """``raw`` parsed as ``method``'s request, or left as bytes when it does not parse (the handler refuses it)."""
    request_type: type[Message] = message_class(SERVICE.methods_by_name[method].input_type)
    try:
        return request_type.FromString(raw)
    except DecodeError:
        return raw


def add_memory_service(servicer: object, server: grpc.aio.Server) -> None:
    """Register every MemoryService method of ``servicer``, parsing requests in the handler."""
    handlers: dict[str, grpc.RpcMethodHandler[Any, Any]] = {
        method.name: grpc.unary_unary_rpc_method_handler(
            _decoding(getattr(servicer, method.name), message_class(method.input_type)),
            request_deserializer=None,
            response_serializer=message_class(method.output_type).SerializeToString,
        )
        for method in SERVICE.methods
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE.full_name, handlers),))
    server.add_registered_method_handlers(SERVICE.full_name, handlers)
