"""Client enums ↔ proto enum numbers, by the proto's naming rule: ``SPEAKER_USER`` is ``Speaker.USER``."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, TypeVar

from npc_memory_client.model import (
    CloseReason,
    ContentType,
    Fusion,
    Speaker,
    StoreOutcome,
    Subject,
    Tier,
    Visibility,
)
from npc_memory_client.v1 import memory_pb2 as pb

E = TypeVar("E", bound=StrEnum)

# Each proto enum (typed Any: every generated enum wrapper is its own type) and its value-name prefix.
_WIRE: dict[type[StrEnum], tuple[Any, str]] = {
    Speaker: (pb.Speaker, "SPEAKER_"),
    Subject: (pb.Subject, "SUBJECT_"),
    ContentType: (pb.ContentType, "CONTENT_TYPE_"),
    Tier: (pb.Tier, "TIER_"),
    CloseReason: (pb.CloseReason, "CLOSE_REASON_"),
    Fusion: (pb.FusionMethod, "FUSION_METHOD_"),
    StoreOutcome: (pb.StoreOutcome, "STORE_OUTCOME_"),
    Visibility: (pb.Visibility, "VISIBILITY_"),
}


def to_wire(value: StrEnum) -> Any:
    """The proto number of a client enum value; Any because each proto enum is its own type."""
    proto, prefix = _WIRE[type(value)]
    return proto.Value(prefix + value.name)


def from_wire(kind: type[E], number: int) -> E:
    """The client enum value of a proto number; ValueError for UNSPECIFIED or a number this client lacks."""
    proto, prefix = _WIRE[kind]
    name = proto.Name(number).removeprefix(prefix)
    if name not in kind.__members__:
        raise ValueError(f"{kind.__name__} has no value for proto {proto.Name(number)}")
    return kind[name]
