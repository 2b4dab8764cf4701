"""Server reflection that serves the proto files with their comments, so ``grpcurl describe`` explains each field.

grpcio-reflection answers from the descriptors the generated modules carry, which hold no comments. clients/generate
also writes the same files with their source comments (``npc_memory_client/v1/documented.binpb``); this servicer
answers with those for the project's own files and leaves every other file (google's, grpc's) as it was.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Sequence
from importlib import resources
from typing import Any

import grpc
from google.protobuf import descriptor_pb2
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from grpc_reflection.v1alpha._async import ReflectionServicer

DOCUMENTED = "documented.binpb"


def documented_files() -> dict[str, bytes]:
    """Each of the project's proto files, by name, serialized with its comments.

    protoc writes each field's JSON name into a descriptor set; the generated modules' descriptors carry none, so
    grpcurl prints the proto's own field names (``memory_id``). The JSON names are cleared to keep it so.
    """
    data = resources.files("npc_memory_client.v1").joinpath(DOCUMENTED).read_bytes()
    files = descriptor_pb2.FileDescriptorSet.FromString(data).file
    for f in files:
        _clear_json_names(f.message_type)
    return {f.name: f.SerializeToString() for f in files}


def _clear_json_names(messages: Iterable[descriptor_pb2.DescriptorProto]) -> None:
    for message in messages:
        for field in message.field:
            field.ClearField("json_name")
        _clear_json_names(message.nested_type)


class DocumentedReflection(ReflectionServicer):  # type: ignore[misc]
    """grpcio-reflection's servicer, answering with the documented form of the project's files."""

    def __init__(self, service_names: Sequence[str], documented: dict[str, bytes]) -> None:
        super().__init__(service_names)
        self._documented = documented

    async def ServerReflectionInfo(  # noqa: N802  (the RPC's name)
        self, request_iterator: AsyncIterable[reflection_pb2.ServerReflectionRequest], context: Any
    ) -> AsyncIterator[reflection_pb2.ServerReflectionResponse]:
        """The base servicer's answers, each file of ours swapped for its documented form."""
        async for response in super().ServerReflectionInfo(request_iterator, context):
            if response.HasField("file_descriptor_response"):
                files = response.file_descriptor_response.file_descriptor_proto
                swapped = [self._documented.get(descriptor_pb2.FileDescriptorProto.FromString(f).name, f)
                           for f in files]
                del files[:]
                files.extend(swapped)
            yield response


def add_reflection(service_names: Sequence[str], server: grpc.aio.Server) -> None:
    """Serve reflection for ``service_names`` on ``server``, with the project's comments."""
    reflection_pb2_grpc.add_ServerReflectionServicer_to_server(
        DocumentedReflection(service_names, documented_files()), server)
