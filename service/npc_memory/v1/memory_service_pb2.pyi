import datetime

from google.protobuf import field_mask_pb2 as _field_mask_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from npc_memory.v1 import memory_pb2 as _memory_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class StoreMemoriesRequest(_message.Message):
    __slots__ = ("scope", "memories", "request_id")
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    MEMORIES_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    scope: _memory_pb2.Scope
    memories: _containers.RepeatedCompositeFieldContainer[_memory_pb2.MemoryInput]
    request_id: str
    def __init__(self, scope: _Optional[_Union[_memory_pb2.Scope, _Mapping]] = ..., memories: _Optional[_Iterable[_Union[_memory_pb2.MemoryInput, _Mapping]]] = ..., request_id: _Optional[str] = ...) -> None: ...

class StoreMemoriesResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[_memory_pb2.StoreResult]
    def __init__(self, results: _Optional[_Iterable[_Union[_memory_pb2.StoreResult, _Mapping]]] = ...) -> None: ...

class SearchMemoriesRequest(_message.Message):
    __slots__ = ("scope", "query", "query_embedding", "limit", "weights", "as_of", "now", "filter", "fusion", "include_invalidated")
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    QUERY_EMBEDDING_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    WEIGHTS_FIELD_NUMBER: _ClassVar[int]
    AS_OF_FIELD_NUMBER: _ClassVar[int]
    NOW_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    FUSION_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_INVALIDATED_FIELD_NUMBER: _ClassVar[int]
    scope: _memory_pb2.Scope
    query: str
    query_embedding: _containers.RepeatedScalarFieldContainer[float]
    limit: int
    weights: _memory_pb2.Weights
    as_of: _timestamp_pb2.Timestamp
    now: _timestamp_pb2.Timestamp
    filter: _memory_pb2.MemoryFilter
    fusion: _memory_pb2.FusionMethod
    include_invalidated: bool
    def __init__(self, scope: _Optional[_Union[_memory_pb2.Scope, _Mapping]] = ..., query: _Optional[str] = ..., query_embedding: _Optional[_Iterable[float]] = ..., limit: _Optional[int] = ..., weights: _Optional[_Union[_memory_pb2.Weights, _Mapping]] = ..., as_of: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., now: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., filter: _Optional[_Union[_memory_pb2.MemoryFilter, _Mapping]] = ..., fusion: _Optional[_Union[_memory_pb2.FusionMethod, str]] = ..., include_invalidated: _Optional[bool] = ...) -> None: ...

class SearchMemoriesResponse(_message.Message):
    __slots__ = ("results", "embedding_model")
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_MODEL_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[_memory_pb2.ScoredMemory]
    embedding_model: str
    def __init__(self, results: _Optional[_Iterable[_Union[_memory_pb2.ScoredMemory, _Mapping]]] = ..., embedding_model: _Optional[str] = ...) -> None: ...

class GetMemoryRequest(_message.Message):
    __slots__ = ("scope", "memory_id")
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    MEMORY_ID_FIELD_NUMBER: _ClassVar[int]
    scope: _memory_pb2.Scope
    memory_id: str
    def __init__(self, scope: _Optional[_Union[_memory_pb2.Scope, _Mapping]] = ..., memory_id: _Optional[str] = ...) -> None: ...

class GetMemoryResponse(_message.Message):
    __slots__ = ("memory",)
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    memory: _memory_pb2.Memory
    def __init__(self, memory: _Optional[_Union[_memory_pb2.Memory, _Mapping]] = ...) -> None: ...

class ListMemoriesRequest(_message.Message):
    __slots__ = ("scope", "page_size", "page_token", "filter", "include_invalidated")
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_INVALIDATED_FIELD_NUMBER: _ClassVar[int]
    scope: _memory_pb2.Scope
    page_size: int
    page_token: str
    filter: _memory_pb2.MemoryFilter
    include_invalidated: bool
    def __init__(self, scope: _Optional[_Union[_memory_pb2.Scope, _Mapping]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., filter: _Optional[_Union[_memory_pb2.MemoryFilter, _Mapping]] = ..., include_invalidated: _Optional[bool] = ...) -> None: ...

class ListMemoriesResponse(_message.Message):
    __slots__ = ("memories", "next_page_token")
    MEMORIES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    memories: _containers.RepeatedCompositeFieldContainer[_memory_pb2.Memory]
    next_page_token: str
    def __init__(self, memories: _Optional[_Iterable[_Union[_memory_pb2.Memory, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class InvalidateMemoryRequest(_message.Message):
    __slots__ = ("scope", "memory_id", "invalid_at")
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    MEMORY_ID_FIELD_NUMBER: _ClassVar[int]
    INVALID_AT_FIELD_NUMBER: _ClassVar[int]
    scope: _memory_pb2.Scope
    memory_id: str
    invalid_at: _timestamp_pb2.Timestamp
    def __init__(self, scope: _Optional[_Union[_memory_pb2.Scope, _Mapping]] = ..., memory_id: _Optional[str] = ..., invalid_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class InvalidateMemoryResponse(_message.Message):
    __slots__ = ("memory",)
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    memory: _memory_pb2.Memory
    def __init__(self, memory: _Optional[_Union[_memory_pb2.Memory, _Mapping]] = ...) -> None: ...

class UpdateMemoryRequest(_message.Message):
    __slots__ = ("scope", "memory_id", "update_mask", "importance", "tier", "metadata", "content", "valid_at")
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    MEMORY_ID_FIELD_NUMBER: _ClassVar[int]
    UPDATE_MASK_FIELD_NUMBER: _ClassVar[int]
    IMPORTANCE_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    VALID_AT_FIELD_NUMBER: _ClassVar[int]
    scope: _memory_pb2.Scope
    memory_id: str
    update_mask: _field_mask_pb2.FieldMask
    importance: int
    tier: _memory_pb2.Tier
    metadata: _struct_pb2.Struct
    content: str
    valid_at: _timestamp_pb2.Timestamp
    def __init__(self, scope: _Optional[_Union[_memory_pb2.Scope, _Mapping]] = ..., memory_id: _Optional[str] = ..., update_mask: _Optional[_Union[_field_mask_pb2.FieldMask, _Mapping]] = ..., importance: _Optional[int] = ..., tier: _Optional[_Union[_memory_pb2.Tier, str]] = ..., metadata: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., content: _Optional[str] = ..., valid_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class UpdateMemoryResponse(_message.Message):
    __slots__ = ("memory",)
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    memory: _memory_pb2.Memory
    def __init__(self, memory: _Optional[_Union[_memory_pb2.Memory, _Mapping]] = ...) -> None: ...

class GetMemoryHistoryRequest(_message.Message):
    __slots__ = ("scope", "subject_id", "slot", "memory_id")
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_ID_FIELD_NUMBER: _ClassVar[int]
    SLOT_FIELD_NUMBER: _ClassVar[int]
    MEMORY_ID_FIELD_NUMBER: _ClassVar[int]
    scope: _memory_pb2.Scope
    subject_id: str
    slot: str
    memory_id: str
    def __init__(self, scope: _Optional[_Union[_memory_pb2.Scope, _Mapping]] = ..., subject_id: _Optional[str] = ..., slot: _Optional[str] = ..., memory_id: _Optional[str] = ...) -> None: ...

class GetMemoryHistoryResponse(_message.Message):
    __slots__ = ("memories",)
    MEMORIES_FIELD_NUMBER: _ClassVar[int]
    memories: _containers.RepeatedCompositeFieldContainer[_memory_pb2.Memory]
    def __init__(self, memories: _Optional[_Iterable[_Union[_memory_pb2.Memory, _Mapping]]] = ...) -> None: ...

class ForgetPlayerRequest(_message.Message):
    __slots__ = ("user_id",)
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    user_id: str
    def __init__(self, user_id: _Optional[str] = ...) -> None: ...

class ForgetPlayerResponse(_message.Message):
    __slots__ = ("deleted_memories",)
    DELETED_MEMORIES_FIELD_NUMBER: _ClassVar[int]
    deleted_memories: int
    def __init__(self, deleted_memories: _Optional[int] = ...) -> None: ...
