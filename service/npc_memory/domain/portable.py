"""The export file's format: JSON Lines, a header, one record per stored row with a ``kind``, an end line.

Each kind is one table's rows of one player, its fields the table's columns by name (docs/guide/export-import.md).
Reading a record checks every field's type and turns it into the value the loader writes; a record that does
not read names its line and field. Pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from enum import Enum
from typing import Any
from uuid import UUID

from npc_memory.errors import FieldViolation, InvalidArgumentError

FORMAT = "npc-memory-export"
"""The header's ``format``: what the file is."""
VERSION = 1
"""The header's ``version``: a reader refuses a version it does not know."""
HEADER = "header"
END = "end"


class FieldType(Enum):
    """How a field is written in the file, and what the loader gets for it."""

    TEXT = "a string"
    UUID = "a UUID string"
    INT = "an integer"
    TIME = "an ISO 8601 timestamp with its offset"
    JSON = "any JSON value"
    VECTOR = "an array of numbers"
    TEXTS = "an array of strings"
    INTS = "an array of integers"
    TIMES = "an array of ISO 8601 timestamps ('infinity' allowed)"


@dataclass(frozen=True)
class Field:
    """One column of a kind: its name in the file, its type, whether it may be null (and then left out), its column."""

    name: str
    type: FieldType
    nullable: bool = False
    column: str = ""
    """The table's column, when not the field's name (a link's ``kind`` is ``link_kind``: ``kind`` names the record)."""


@dataclass(frozen=True)
class Kind:
    """One kind of record: the table it comes from, its columns, and whether its rows belong to one heroine."""

    name: str
    table: str
    fields: tuple[Field, ...]
    order: str
    """The export's order of the rows (column names, comma-separated)."""

    def field_names(self) -> list[str]:
        """The fields, in the file's order."""
        return [f.name for f in self.fields]

    def columns(self) -> list[str]:
        """The table's columns, in the fields' order."""
        return [f.column or f.name for f in self.fields]


def _f(name: str, type_: FieldType = FieldType.TEXT, nullable: bool = False, column: str = "") -> Field:
    return Field(name, type_, nullable, column)


T = FieldType
TIMELINE = Kind("timeline", "timelines", (
    _f("user_id"), _f("timeline_id", T.INT), _f("parent_id", T.INT), _f("branched_at", T.TIME), _f("save_id"),
    _f("created_at", T.TIME), _f("lineage", T.INTS), _f("lineage_upto", T.TIMES)), "timeline_id")
PLAYER_STATE = Kind("player_state", "player_state", (
    _f("user_id"), _f("timeline_id", T.INT), _f("updated_at", T.TIME)), "user_id")
SAVE_POINT = Kind("save_point", "save_points", (
    _f("user_id"), _f("save_id"), _f("timeline_id", T.INT), _f("saved_at", T.TIME)), "save_id")
MEMORY = Kind("memory", "user_memories", (
    _f("user_id"), _f("heroine_id"), _f("id", T.UUID), _f("speaker"), _f("subject"), _f("subject_id"),
    _f("content_type"), _f("content"), _f("content_key"), _f("importance", T.INT), _f("tier"),
    _f("slot", nullable=True), _f("metadata", T.JSON), _f("embedding", T.VECTOR), _f("embedding_model"),
    _f("terms", T.TEXTS), _f("meaning", T.TEXTS, nullable=True), _f("valid_at", T.TIME),
    _f("invalid_at", T.TIME, nullable=True), _f("close_reason", nullable=True),
    _f("superseded_by", T.UUID, nullable=True), _f("created_at", T.TIME), _f("updated_at", T.TIME),
    _f("timeline_id", T.INT), _f("closed_at", T.TIME, nullable=True), _f("visibility"),
    _f("dialogue_id", nullable=True), _f("dialogue_position", T.INT, nullable=True), _f("speaker_name", nullable=True)),
    "heroine_id, created_at, id")
CHANGE = Kind("change", "memory_changes", (
    _f("user_id"), _f("heroine_id"), _f("memory_id", T.UUID), _f("seq", T.INT), _f("timeline_id", T.INT),
    _f("changed_at", T.TIME), _f("importance", T.INT), _f("tier"), _f("metadata", T.JSON),
    _f("invalid_at", T.TIME, nullable=True), _f("close_reason", nullable=True),
    _f("superseded_by", T.UUID, nullable=True)), "seq")
LINK = Kind("link", "memory_links", (
    _f("user_id"), _f("heroine_id"), _f("from_id", T.UUID), _f("to_id", T.UUID), _f("link_kind", column="kind"),
    _f("depth", T.INT), _f("via"), _f("discovered_at", T.TIME)), "heroine_id, from_id, to_id, kind")
EXPAND_STATE = Kind("expand_state", "expand_state", (
    _f("user_id"), _f("heroine_id"), _f("memory_id", T.UUID), _f("depth", T.INT), _f("updated_at", T.TIME)),
    "heroine_id")
EXTRACTION_JOB = Kind("extraction_job", "extraction_jobs", (
    _f("user_id"), _f("job_id", T.UUID), _f("heroine_id"), _f("dialogue_id"), _f("dialogue", T.JSON), _f("state"),
    _f("attempts", T.INT), _f("next_attempt_at", T.TIME), _f("last_error"), _f("result", T.JSON, nullable=True),
    _f("created_at", T.TIME), _f("updated_at", T.TIME)), "heroine_id, dialogue_id")
STORE_REQUEST = Kind("store_request", "store_requests", (
    _f("user_id"), _f("heroine_id"), _f("request_id"), _f("fingerprint"), _f("response", T.JSON),
    _f("created_at", T.TIME)), "heroine_id, request_id")

KINDS: tuple[Kind, ...] = (TIMELINE, PLAYER_STATE, SAVE_POINT, MEMORY, CHANGE, LINK, EXPAND_STATE, EXTRACTION_JOB,
                           STORE_REQUEST)
"""Every kind, in the order a player's records are written and loaded (a row before what refers to it)."""
BY_NAME = {k.name: k for k in KINDS}

NOT_EXPORTED = {"user_memories": {"scope_version"}, "memory_changes": {"scope_version"}}
"""Columns the database derives on load (a scope's change counter, stamped by a trigger), so never in the file."""


@dataclass(frozen=True)
class Header:
    """The file's first line: the format and what made the stored vectors and keyword terms."""

    embedding_model: str | None
    """As ``service_settings`` records it: ``name/dimensions``; None when the source recorded none."""
    text_terms: str | None
    """The text options the rows' keyword terms were made with, as recorded; None when none was."""

    def encode(self, exported_at: datetime) -> str:
        """The header line."""
        return json.dumps({"kind": HEADER, "format": FORMAT, "version": VERSION,
                           "exported_at": exported_at.isoformat(), "embedding_model": self.embedding_model,
                           "text_terms": self.text_terms}, ensure_ascii=False)

    def model_name_and_dim(self) -> tuple[str, int] | None:
        """The embedding model's name and vector size, when recorded."""
        if self.embedding_model is None:
            return None
        name, _, dim = self.embedding_model.rpartition("/")
        return name, int(dim)


def end_line(records: int) -> str:
    """The last line: how many records came between it and the header (a cut-off file has none)."""
    return json.dumps({"kind": END, "records": records})


@dataclass(frozen=True)
class Record:
    """One read record: its kind, the file line it came from, and its values in the kind's field order."""

    kind: Kind
    line: int
    values: tuple[Any, ...]

    def get(self, name: str) -> Any:
        """The value of one field."""
        return self.values[self.kind.field_names().index(name)]


def _bad(line: int, field: str, description: str) -> InvalidArgumentError:
    return InvalidArgumentError([FieldViolation(f"line {line}: {field}", description)])


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def parse_line(text: str, line: int) -> dict[str, Any]:
    """A line as a JSON object (InvalidArgumentError naming the line otherwise).

    A number with a fraction or exponent is read as a Decimal, its digits exactly as written: a vector goes to
    PostgreSQL as the same text, with no round trip through a binary float and back.
    """
    try:
        obj = json.loads(text, parse_float=Decimal, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise _bad(line, "(line)", f"is not JSON: {exc.msg} at column {exc.colno}") from None
    except ValueError as exc:
        raise _bad(line, "(line)", str(exc)) from None
    if not isinstance(obj, dict):
        raise _bad(line, "(line)", "must be a JSON object")
    kind = obj.get("kind")
    if not isinstance(kind, str):
        raise _bad(line, "kind", "must be a string naming the record's kind")
    return obj


def read_header(obj: Mapping[str, Any], line: int) -> Header:
    """The header's values; refuses another format or a version this reader does not know."""
    if obj.get("kind") != HEADER:
        raise _bad(line, "kind", f"the file must start with a '{HEADER}' line (is it an npc-memory export?)")
    if obj.get("format") != FORMAT:
        raise _bad(line, "format", f"must be '{FORMAT}'")
    if obj.get("version") != VERSION:
        raise _bad(line, "version", f"this npc-memory reads version {VERSION}, not {obj.get('version')!r}")
    model, terms = obj.get("embedding_model"), obj.get("text_terms")
    if model is not None and (not isinstance(model, str) or not model.rpartition("/")[2].isdigit()):
        raise _bad(line, "embedding_model", "must be null or 'name/dimensions'")
    if terms is not None and not isinstance(terms, str):
        raise _bad(line, "text_terms", "must be null or a string")
    return Header(model, terms)


def read_end(obj: Mapping[str, Any], line: int, records: int) -> None:
    """Check the end line against the records read."""
    if obj.get("records") != records:
        raise _bad(line, "records", f"says {obj.get('records')!r} records, but the file holds {records}")


def read_record(obj: Mapping[str, Any], line: int) -> Record:
    """A record of a known kind with every field read (InvalidArgumentError naming the line and field)."""
    kind = BY_NAME.get(obj["kind"])
    if kind is None:
        raise _bad(line, "kind", f"unknown kind {obj['kind']!r} (known: {', '.join(BY_NAME)})")
    unknown = set(obj) - set(kind.field_names()) - {"kind"}
    if unknown:
        raise _bad(line, sorted(unknown)[0], f"is not a field of a {kind.name} record")
    values: list[Any] = []
    for field in kind.fields:
        value = obj.get(field.name)
        if value is None:
            if not field.nullable:
                raise _bad(line, field.name, "is required")
            values.append(None)
            continue
        try:
            values.append(_READERS[field.type](value))
        except (ValueError, TypeError) as exc:
            raise _bad(line, field.name, f"must be {field.type.value}: {exc}") from None
    if not values[0]:
        raise _bad(line, "user_id", "must not be empty")
    return Record(kind, line, tuple(values))


def _time(value: Any, infinite: bool = False) -> str:
    if not isinstance(value, str):
        raise TypeError(f"got {type(value).__name__}")
    if infinite and value in ("infinity", "-infinity"):
        return value
    parsed = datetime.fromisoformat(value)
    if parsed.tzinfo is None:
        raise ValueError("no UTC offset")
    return value


def _int(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"got {type(value).__name__}")
    return value


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"got {type(value).__name__}")
    if "\x00" in value:
        raise ValueError("holds a NUL character")
    return value


def _array(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise TypeError(f"got {type(value).__name__}")
    return value


def _vector(value: Any) -> str:
    numbers = _array(value)
    if not numbers:
        raise ValueError("is empty")
    bad = next((n for n in numbers if type(n) is not Decimal and type(n) is not int), None)
    if bad is not None:
        raise TypeError(f"got {bad!r}")
    return "[" + ",".join(map(str, numbers)) + "]"


def _json(value: Any) -> Any:
    """A JSON value with its Decimals as floats again (the service wrote them from doubles)."""
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, list):
        return [_json(v) for v in value]
    if isinstance(value, dict):
        return {k: _json(v) for k, v in value.items()}
    return value


_READERS: dict[FieldType, Callable[[Any], Any]] = {
    FieldType.TEXT: _text,
    FieldType.UUID: lambda v: UUID(_text(v)),
    FieldType.INT: _int,
    FieldType.TIME: _time,
    FieldType.JSON: _json,
    FieldType.VECTOR: _vector,
    FieldType.TEXTS: lambda v: [_text(x) for x in _array(v)],
    FieldType.INTS: lambda v: [_int(x) for x in _array(v)],
    FieldType.TIMES: lambda v: [_time(x, infinite=True) for x in _array(v)],
}
"""Per type, the loader's value of a present field: str/int/UUID/list/JSON value, or the text PostgreSQL parses."""

def check_vector(record: Record, header: Header) -> None:
    """A memory's vector must be of the header's model and size: the database holds one model's vectors."""
    named = header.model_name_and_dim()
    if named is None:
        raise _bad(record.line, "embedding_model", "the header names no embedding model, but the file holds memories")
    name, dim = named
    if record.get("embedding_model") != name:
        raise _bad(record.line, "embedding_model", f"must be the header's model {name!r}")
    size = str(record.get("embedding")).count(",") + 1
    if size != dim:
        raise _bad(record.line, "embedding", f"has {size} numbers, but the header's model makes {dim}")


def check_references(records: list[Record]) -> None:
    """Every link, change, expansion and successor names a memory of the file in the same player (and scope)."""
    memories: set[tuple[Any, ...]] = {
        (r.get("user_id"), r.get("heroine_id"), r.get("id")) for r in records if r.kind is MEMORY}
    players: set[tuple[Any, ...]] = {(user, memory_id) for user, _, memory_id in memories}
    for r in records:
        user = r.get("user_id")
        named: list[tuple[str, tuple[Any, ...], set[tuple[Any, ...]]]]
        if r.kind is MEMORY:
            named = [("superseded_by", (user, r.get("superseded_by")), players)] if r.get("superseded_by") else []
        elif r.kind is CHANGE:
            named = [("memory_id", (user, r.get("memory_id")), players)]
        elif r.kind is LINK:
            named = [(end, (user, r.get("heroine_id"), r.get(end)), memories) for end in ("from_id", "to_id")]
        elif r.kind is EXPAND_STATE:
            named = [("memory_id", (user, r.get("heroine_id"), r.get("memory_id")), memories)]
        else:
            continue
        for field, key, known in named:
            if key not in known:
                raise _bad(r.line, field, "names no memory of this file in the same "
                           f"{'player' if known is players else 'player and heroine'}")
