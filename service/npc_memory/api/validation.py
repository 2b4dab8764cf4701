"""Request checks: every bad field is collected and reported by its proto path; nothing is written."""

from __future__ import annotations

import json
import math
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

import numpy as np
from google.protobuf import json_format, struct_pb2, timestamp_pb2
from npc_memory_client.v1 import memory_pb2 as pb

from npc_memory.domain.fact_rules import (
    FIXED_SUBJECT_IDS,
    HEROINE_ID,
    MAX_IMPORTANCE,
    MIN_IMPORTANCE,
    heroine_id_ok,
    importance_ok,
    slot_problem,
    text_problem,
)
from npc_memory.domain.gametime import MAX_GAME_DAY, MIN_GAME_DAY, game_instant
from npc_memory.domain.model import (
    DEFAULT_IMPORTANCE,
    ContentType,
    MemoryRef,
    Scope,
    Subject,
    Tier,
    Vector,
    Weights,
)
from npc_memory.errors import FieldViolation, InvalidArgumentError

E = TypeVar("E")

# Matched with fullmatch: a pattern ending in ``$`` would also accept the id followed by a newline.
USER_ID = re.compile(r"[^\s\x00-\x1f\x7f]{1,128}")
MAX_REQUEST_ID = 128
MAX_METADATA_BYTES = 16_384
# Weights are relative, so this range loses nothing; outside it PostgreSQL's float8 arithmetic on the scores
# overflows (1e308 x 4) or underflows (5e-324 x a score < 1 rounds to zero), which it reports as an error.
MIN_WEIGHT = 1e-6
MAX_WEIGHT = 1e6


def _non_finite(value: struct_pb2.Struct | struct_pb2.ListValue, where: str = "") -> str | None:
    """The path of the first NaN or infinite number inside a Struct, or None."""
    items = (
        [(f"{where}.{k}" if where else k, v) for k, v in value.fields.items()]
        if isinstance(value, struct_pb2.Struct)
        else [(f"{where}[{i}]", v) for i, v in enumerate(value.values)]
    )
    for at, item in items:
        kind = item.WhichOneof("kind")
        if kind == "number_value" and not math.isfinite(item.number_value):
            return at
        inner = item.struct_value if kind == "struct_value" else item.list_value if kind == "list_value" else None
        found = _non_finite(inner, at) if inner is not None else None
        if found is not None:
            return found
    return None


@dataclass
class Checker:
    """Collects violations; ``done`` raises them all at once."""

    violations: list[FieldViolation] = field(default_factory=list)

    def bad(self, path: str, description: str) -> None:
        """Record one bad field."""
        self.violations.append(FieldViolation(path, description))

    def done(self) -> None:
        """Raise InvalidArgumentError if anything was recorded."""
        if self.violations:
            raise InvalidArgumentError(self.violations)

    def text(self, path: str, value: str, *, max_chars: int, required: bool = True) -> str:
        """A string without NUL, within ``max_chars``; empty allowed unless ``required``."""
        if problem := text_problem(value, max_chars, required):
            self.bad(path, problem)
        return value

    def scope(self, path: str, scope: pb.Scope, present: bool) -> Scope:
        """Both ids present and well formed."""
        if not present:
            self.bad(path, "is required")
            return Scope("", "")
        if not USER_ID.fullmatch(scope.user_id):
            self.bad(f"{path}.user_id", "must be 1-128 characters without whitespace or control characters")
        if not HEROINE_ID.fullmatch(scope.heroine_id):
            self.bad(f"{path}.heroine_id", "must be 1-64 characters of a-z, 0-9, '_' or '-', starting alphanumeric")
        return Scope(scope.user_id, scope.heroine_id)

    def user_id(self, path: str, value: str) -> str:
        """A well-formed player id."""
        if not USER_ID.fullmatch(value):
            self.bad(path, "must be 1-128 characters without whitespace or control characters")
        return value

    def enum(self, path: str, value: int, table: dict[int, E], default: E | None = None) -> E | None:
        """A known enum number; UNSPECIFIED gives ``default`` or is reported as required."""
        if value in table:
            return table[value]
        if value == 0 and default is not None:
            return default
        self.bad(path, "is required" if value == 0 else f"unknown value {value}")
        return None

    def enums(self, path: str, values: Sequence[int], table: dict[int, E]) -> tuple[E, ...]:
        """A list of known enum numbers."""
        out = []
        for i, v in enumerate(values):
            got = self.enum(f"{path}[{i}]", v, table)
            if got is not None:
                out.append(got)
        return tuple(out)

    def uuid(self, path: str, value: str, kind: str = "memory") -> uuid.UUID:
        """A memory id (or the ``kind`` of id named, e.g. ``job``)."""
        try:
            return uuid.UUID(value)
        except ValueError:
            self.bad(path, f"is not a {kind} id (a UUID)" if value else "is required")
            return uuid.UUID(int=0)

    def timestamp(self, path: str, ts: timestamp_pb2.Timestamp, present: bool) -> datetime | None:
        """A Timestamp within years 1-9999 as an aware datetime; None when absent."""
        if not present:
            return None
        try:
            when = ts.ToDatetime(tzinfo=UTC)
        except (ValueError, OverflowError) as exc:
            self.bad(path, f"is not a valid timestamp ({exc})")
            return None
        if not 0 <= ts.nanos < 1_000_000_000:
            self.bad(path, "nanos must be in [0, 1e9)")
        return when

    def when(
        self, path: str, ts: timestamp_pb2.Timestamp, present: bool, game_path: str, game: pb.GameTime,
        game_present: bool,
    ) -> datetime | None:
        """A Timestamp or a game day (never both) as an aware datetime; None when neither is set."""
        if present and game_present:
            self.bad(game_path, f"set {path} or {game_path}, not both")
            return None
        if not game_present:
            return self.timestamp(path, ts, present)
        if not MIN_GAME_DAY <= game.day <= MAX_GAME_DAY:  # also refuses NaN
            self.bad(f"{game_path}.day", f"must be a game day between {MIN_GAME_DAY:,.0f} and {MAX_GAME_DAY:,.0f}")
            return None
        return game_instant(game.day)

    def timeline(self, path: str, value: int) -> int | None:
        """A timeline id; 0 means the live timeline (None)."""
        if value < 0:
            self.bad(path, "must be a timeline id (0 means the live timeline)")
        return value or None

    def importance(self, path: str, value: int, default: int | None = DEFAULT_IMPORTANCE) -> int:
        """1-10; 0 means ``default``."""
        if value == 0 and default is not None:
            return default
        if not importance_ok(value):
            self.bad(path, f"must be between {MIN_IMPORTANCE} and {MAX_IMPORTANCE} (0 means the default 5)")
        return value

    def vector(self, path: str, values: Sequence[float], dim: int) -> Vector | None:
        """A finite, non-zero vector of the server's size; None when empty."""
        if not values:
            return None
        if len(values) != dim:
            self.bad(path, f"has {len(values)} values; this server's embeddings have {dim}")
            return None
        # In float64: the float32 norm of values near 1e20 overflows to infinity, and dividing by it stored an
        # all-zero vector. Every finite float32 vector has a finite float64 norm, so a sum of squares that is not
        # finite means a NaN or an infinity among the values. sqrt(x @ x) is np.linalg.norm's own formula for a
        # vector (the same float), without its ~5 us of argument handling on every request.
        vec = np.asarray(values, dtype=np.float64)
        squares = float(vec @ vec)
        if not math.isfinite(squares):
            self.bad(path, "contains NaN or infinity")
            return None
        if squares == 0.0:
            self.bad(path, "is all zeros")
            return None
        result: Vector = (vec / math.sqrt(squares)).astype(np.float32)
        return result

    def metadata(self, path: str, value: struct_pb2.Struct) -> dict[str, Any]:
        """A JSON object of at most 16 KiB without NUL characters or non-finite numbers."""
        where = _non_finite(value)
        if where is not None:
            # jsonb has no NaN or infinity (and the JSON conversion refuses them).
            self.bad(path, f"holds a number that is NaN or infinite at {where}")
            return {}
        data: dict[str, Any] = json_format.MessageToDict(value)
        encoded = json.dumps(data, ensure_ascii=False)
        if len(encoded.encode()) > MAX_METADATA_BYTES:
            self.bad(path, f"is larger than {MAX_METADATA_BYTES} bytes as JSON")
        elif "\\u0000" in encoded:
            self.bad(path, "contains a NUL character")
        return data

    def weights(self, path: str, w: pb.Weights) -> Weights:
        """Four weights, each 0 or between MIN_WEIGHT and MAX_WEIGHT."""
        values = {"recency": w.recency, "importance": w.importance, "relevance": w.relevance,
                  "keyword": w.keyword}
        for name, v in values.items():
            if not (v == 0 or MIN_WEIGHT <= v <= MAX_WEIGHT):
                self.bad(f"{path}.{name}", f"must be 0 or between {MIN_WEIGHT:g} and {MAX_WEIGHT:g}")
        if all(v == 0 for v in values.values()):
            self.bad(path, "at least one weight must be positive (omit weights for the defaults)")
        return Weights(**values)

    def subject_id(self, path: str, subject: Subject | None, value: str, scope: Scope) -> str:
        """The subject id matching the subject, defaulted from it when empty."""
        if subject is not None and subject in FIXED_SUBJECT_IDS:
            fixed = FIXED_SUBJECT_IDS[subject]
            if value not in ("", fixed):
                self.bad(path, f"must be '{fixed}' (or empty) for SUBJECT_{subject.name}")
            return fixed
        if subject is Subject.HEROINE:
            if not value:
                return scope.heroine_id
            if not heroine_id_ok(value):
                self.bad(path, "must be a heroine id (a-z, 0-9, '_' or '-') for SUBJECT_HEROINE")
        return value

    def ref(self, path: str, ref: pb.MemoryRef, index: int, batch: int) -> MemoryRef:
        """A memory id, or the position of another fact of the batch (``index`` is the naming fact's)."""
        if ref.WhichOneof("ref") == "batch_index":
            if not 0 <= ref.batch_index < batch:
                self.bad(f"{path}.batch_index", f"must name a fact of this request (0-{batch - 1})")
            elif ref.batch_index == index:
                self.bad(f"{path}.batch_index", "a fact cannot name itself")
            return ref.batch_index
        return self.uuid(f"{path}.memory_id", ref.memory_id)

    def slot(self, path: str, value: str) -> str | None:
        """An optional slot key."""
        if problem := slot_problem(value):
            self.bad(path, problem)
        return value or None


DEFAULT_CONTENT_TYPE = ContentType.FACT
DEFAULT_TIER = Tier.KNOWLEDGE
