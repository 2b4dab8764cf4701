import datetime

from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Speaker(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SPEAKER_UNSPECIFIED: _ClassVar[Speaker]
    SPEAKER_USER: _ClassVar[Speaker]
    SPEAKER_HEROINE: _ClassVar[Speaker]

class Subject(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SUBJECT_UNSPECIFIED: _ClassVar[Subject]
    SUBJECT_USER: _ClassVar[Subject]
    SUBJECT_HEROINE: _ClassVar[Subject]
    SUBJECT_WORLD: _ClassVar[Subject]

class ContentType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CONTENT_TYPE_UNSPECIFIED: _ClassVar[ContentType]
    CONTENT_TYPE_FACT: _ClassVar[ContentType]
    CONTENT_TYPE_PREFERENCE: _ClassVar[ContentType]
    CONTENT_TYPE_TRAIT: _ClassVar[ContentType]
    CONTENT_TYPE_EVENT: _ClassVar[ContentType]
    CONTENT_TYPE_OPINION: _ClassVar[ContentType]
    CONTENT_TYPE_PERSONAL: _ClassVar[ContentType]
    CONTENT_TYPE_RELATIONSHIP: _ClassVar[ContentType]

class Tier(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TIER_UNSPECIFIED: _ClassVar[Tier]
    TIER_GIST: _ClassVar[Tier]
    TIER_KNOWLEDGE: _ClassVar[Tier]
    TIER_SOURCE: _ClassVar[Tier]

class CloseReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CLOSE_REASON_UNSPECIFIED: _ClassVar[CloseReason]
    CLOSE_REASON_SUPERSEDED: _ClassVar[CloseReason]
    CLOSE_REASON_INVALIDATED: _ClassVar[CloseReason]
    CLOSE_REASON_RETIRED: _ClassVar[CloseReason]

class FusionMethod(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FUSION_METHOD_UNSPECIFIED: _ClassVar[FusionMethod]
    FUSION_METHOD_WEIGHTED: _ClassVar[FusionMethod]
    FUSION_METHOD_RRF: _ClassVar[FusionMethod]

class StoreOutcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    STORE_OUTCOME_UNSPECIFIED: _ClassVar[StoreOutcome]
    STORE_OUTCOME_CREATED: _ClassVar[StoreOutcome]
    STORE_OUTCOME_SUPERSEDED: _ClassVar[StoreOutcome]
    STORE_OUTCOME_DUPLICATE: _ClassVar[StoreOutcome]
    STORE_OUTCOME_HISTORICAL: _ClassVar[StoreOutcome]
SPEAKER_UNSPECIFIED: Speaker
SPEAKER_USER: Speaker
SPEAKER_HEROINE: Speaker
SUBJECT_UNSPECIFIED: Subject
SUBJECT_USER: Subject
SUBJECT_HEROINE: Subject
SUBJECT_WORLD: Subject
CONTENT_TYPE_UNSPECIFIED: ContentType
CONTENT_TYPE_FACT: ContentType
CONTENT_TYPE_PREFERENCE: ContentType
CONTENT_TYPE_TRAIT: ContentType
CONTENT_TYPE_EVENT: ContentType
CONTENT_TYPE_OPINION: ContentType
CONTENT_TYPE_PERSONAL: ContentType
CONTENT_TYPE_RELATIONSHIP: ContentType
TIER_UNSPECIFIED: Tier
TIER_GIST: Tier
TIER_KNOWLEDGE: Tier
TIER_SOURCE: Tier
CLOSE_REASON_UNSPECIFIED: CloseReason
CLOSE_REASON_SUPERSEDED: CloseReason
CLOSE_REASON_INVALIDATED: CloseReason
CLOSE_REASON_RETIRED: CloseReason
FUSION_METHOD_UNSPECIFIED: FusionMethod
FUSION_METHOD_WEIGHTED: FusionMethod
FUSION_METHOD_RRF: FusionMethod
STORE_OUTCOME_UNSPECIFIED: StoreOutcome
STORE_OUTCOME_CREATED: StoreOutcome
STORE_OUTCOME_SUPERSEDED: StoreOutcome
STORE_OUTCOME_DUPLICATE: StoreOutcome
STORE_OUTCOME_HISTORICAL: StoreOutcome

class Scope(_message.Message):
    __slots__ = ("user_id", "heroine_id")
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    HEROINE_ID_FIELD_NUMBER: _ClassVar[int]
    user_id: str
    heroine_id: str
    def __init__(self, user_id: _Optional[str] = ..., heroine_id: _Optional[str] = ...) -> None: ...

class MemoryInput(_message.Message):
    __slots__ = ("speaker", "subject", "subject_id", "content_type", "content", "importance", "slot", "supersedes", "valid_at", "metadata", "embedding", "tier")
    SPEAKER_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_ID_FIELD_NUMBER: _ClassVar[int]
    CONTENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    IMPORTANCE_FIELD_NUMBER: _ClassVar[int]
    SLOT_FIELD_NUMBER: _ClassVar[int]
    SUPERSEDES_FIELD_NUMBER: _ClassVar[int]
    VALID_AT_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    speaker: Speaker
    subject: Subject
    subject_id: str
    content_type: ContentType
    content: str
    importance: int
    slot: str
    supersedes: _containers.RepeatedScalarFieldContainer[str]
    valid_at: _timestamp_pb2.Timestamp
    metadata: _struct_pb2.Struct
    embedding: _containers.RepeatedScalarFieldContainer[float]
    tier: Tier
    def __init__(self, speaker: _Optional[_Union[Speaker, str]] = ..., subject: _Optional[_Union[Subject, str]] = ..., subject_id: _Optional[str] = ..., content_type: _Optional[_Union[ContentType, str]] = ..., content: _Optional[str] = ..., importance: _Optional[int] = ..., slot: _Optional[str] = ..., supersedes: _Optional[_Iterable[str]] = ..., valid_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., metadata: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., embedding: _Optional[_Iterable[float]] = ..., tier: _Optional[_Union[Tier, str]] = ...) -> None: ...

class Memory(_message.Message):
    __slots__ = ("memory_id", "scope", "speaker", "subject", "subject_id", "content_type", "content", "importance", "tier", "slot", "metadata", "valid_at", "invalid_at", "created_at", "updated_at", "superseded_by", "close_reason", "embedding_model")
    MEMORY_ID_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    SPEAKER_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_ID_FIELD_NUMBER: _ClassVar[int]
    CONTENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    IMPORTANCE_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    SLOT_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    VALID_AT_FIELD_NUMBER: _ClassVar[int]
    INVALID_AT_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    SUPERSEDED_BY_FIELD_NUMBER: _ClassVar[int]
    CLOSE_REASON_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_MODEL_FIELD_NUMBER: _ClassVar[int]
    memory_id: str
    scope: Scope
    speaker: Speaker
    subject: Subject
    subject_id: str
    content_type: ContentType
    content: str
    importance: int
    tier: Tier
    slot: str
    metadata: _struct_pb2.Struct
    valid_at: _timestamp_pb2.Timestamp
    invalid_at: _timestamp_pb2.Timestamp
    created_at: _timestamp_pb2.Timestamp
    updated_at: _timestamp_pb2.Timestamp
    superseded_by: str
    close_reason: CloseReason
    embedding_model: str
    def __init__(self, memory_id: _Optional[str] = ..., scope: _Optional[_Union[Scope, _Mapping]] = ..., speaker: _Optional[_Union[Speaker, str]] = ..., subject: _Optional[_Union[Subject, str]] = ..., subject_id: _Optional[str] = ..., content_type: _Optional[_Union[ContentType, str]] = ..., content: _Optional[str] = ..., importance: _Optional[int] = ..., tier: _Optional[_Union[Tier, str]] = ..., slot: _Optional[str] = ..., metadata: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., valid_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., invalid_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., superseded_by: _Optional[str] = ..., close_reason: _Optional[_Union[CloseReason, str]] = ..., embedding_model: _Optional[str] = ...) -> None: ...

class Weights(_message.Message):
    __slots__ = ("recency", "importance", "relevance", "keyword")
    RECENCY_FIELD_NUMBER: _ClassVar[int]
    IMPORTANCE_FIELD_NUMBER: _ClassVar[int]
    RELEVANCE_FIELD_NUMBER: _ClassVar[int]
    KEYWORD_FIELD_NUMBER: _ClassVar[int]
    recency: float
    importance: float
    relevance: float
    keyword: float
    def __init__(self, recency: _Optional[float] = ..., importance: _Optional[float] = ..., relevance: _Optional[float] = ..., keyword: _Optional[float] = ...) -> None: ...

class Scores(_message.Message):
    __slots__ = ("recency", "importance", "relevance", "keyword", "final")
    RECENCY_FIELD_NUMBER: _ClassVar[int]
    IMPORTANCE_FIELD_NUMBER: _ClassVar[int]
    RELEVANCE_FIELD_NUMBER: _ClassVar[int]
    KEYWORD_FIELD_NUMBER: _ClassVar[int]
    FINAL_FIELD_NUMBER: _ClassVar[int]
    recency: float
    importance: float
    relevance: float
    keyword: float
    final: float
    def __init__(self, recency: _Optional[float] = ..., importance: _Optional[float] = ..., relevance: _Optional[float] = ..., keyword: _Optional[float] = ..., final: _Optional[float] = ...) -> None: ...

class MemoryFilter(_message.Message):
    __slots__ = ("speakers", "subjects", "subject_ids", "content_types", "min_importance", "tiers", "slot")
    SPEAKERS_FIELD_NUMBER: _ClassVar[int]
    SUBJECTS_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_IDS_FIELD_NUMBER: _ClassVar[int]
    CONTENT_TYPES_FIELD_NUMBER: _ClassVar[int]
    MIN_IMPORTANCE_FIELD_NUMBER: _ClassVar[int]
    TIERS_FIELD_NUMBER: _ClassVar[int]
    SLOT_FIELD_NUMBER: _ClassVar[int]
    speakers: _containers.RepeatedScalarFieldContainer[Speaker]
    subjects: _containers.RepeatedScalarFieldContainer[Subject]
    subject_ids: _containers.RepeatedScalarFieldContainer[str]
    content_types: _containers.RepeatedScalarFieldContainer[ContentType]
    min_importance: int
    tiers: _containers.RepeatedScalarFieldContainer[Tier]
    slot: str
    def __init__(self, speakers: _Optional[_Iterable[_Union[Speaker, str]]] = ..., subjects: _Optional[_Iterable[_Union[Subject, str]]] = ..., subject_ids: _Optional[_Iterable[str]] = ..., content_types: _Optional[_Iterable[_Union[ContentType, str]]] = ..., min_importance: _Optional[int] = ..., tiers: _Optional[_Iterable[_Union[Tier, str]]] = ..., slot: _Optional[str] = ...) -> None: ...

class ScoredMemory(_message.Message):
    __slots__ = ("memory", "scores")
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    SCORES_FIELD_NUMBER: _ClassVar[int]
    memory: Memory
    scores: Scores
    def __init__(self, memory: _Optional[_Union[Memory, _Mapping]] = ..., scores: _Optional[_Union[Scores, _Mapping]] = ...) -> None: ...

class StoreResult(_message.Message):
    __slots__ = ("memory_id", "outcome", "superseded_ids")
    MEMORY_ID_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    SUPERSEDED_IDS_FIELD_NUMBER: _ClassVar[int]
    memory_id: str
    outcome: StoreOutcome
    superseded_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, memory_id: _Optional[str] = ..., outcome: _Optional[_Union[StoreOutcome, str]] = ..., superseded_ids: _Optional[_Iterable[str]] = ...) -> None: ...
