"""What the pages show, made from the service's answers: rows of memories, bars of scores, lines and graphs in SVG."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from google.protobuf import json_format
from google.protobuf.timestamp_pb2 import Timestamp
from npc_memory_client.v1 import context_pb2 as ctx_pb
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc


def when(ts: Timestamp) -> datetime | None:
    """A timestamp as an aware datetime, None when unset."""
    if not ts.seconds and not ts.nanos:
        return None
    return ts.ToDatetime(tzinfo=UTC)


def shown(moment: datetime | None) -> str:
    """A moment as people read it (UTC, to the second), or an empty string."""
    return moment.strftime("%Y-%m-%d %H:%M:%S") if moment else ""


def _name(enum: Any, value: int, prefix: str) -> str:
    return str(enum.Name(value)).removeprefix(prefix).lower().replace("_", " ")


@dataclass(frozen=True)
class MemoryRow:
    """One memory as the pages list it."""

    memory_id: str
    heroine_id: str
    content: str
    tier: str
    importance: int
    content_type: str
    speaker: str
    subject: str
    slot: str
    valid_at: datetime | None
    invalid_at: datetime | None
    created_at: datetime | None
    timeline_id: int
    visibility: str
    shared_from: str
    source: str
    close_reason: str
    superseded_by: str
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def valid(self) -> bool:
        """Whether the memory is still valid (not closed in business time)."""
        return self.invalid_at is None


def memory_row(m: pb.Memory) -> MemoryRow:
    """A Memory message as a row."""
    metadata = json_format.MessageToDict(m.metadata) if m.HasField("metadata") else {}
    # The dialogue a turn was stored from (StoreDialogue), and the turn's place in it.
    source = f"{m.dialogue_id} #{m.dialogue_position + 1}" if m.dialogue_id else ""
    return MemoryRow(
        memory_id=m.memory_id, heroine_id=m.scope.heroine_id, content=m.content,
        tier=_name(pb.Tier, m.tier, "TIER_"), importance=m.importance,
        content_type=_name(pb.ContentType, m.content_type, "CONTENT_TYPE_"),
        speaker=_name(pb.Speaker, m.speaker, "SPEAKER_"), subject=_name(pb.Subject, m.subject, "SUBJECT_"),
        slot=m.slot, valid_at=when(m.valid_at), invalid_at=when(m.invalid_at), created_at=when(m.created_at),
        timeline_id=m.timeline_id, visibility=_name(pb.Visibility, m.visibility, "VISIBILITY_"),
        shared_from=m.shared_from, source=source,
        close_reason=_name(pb.CloseReason, m.close_reason, "CLOSE_REASON_") if m.close_reason else "",
        superseded_by=m.superseded_by, metadata=metadata,
    )


@dataclass(frozen=True)
class Bar:
    """One component of a score: its name, its value in [0, 1] and its weight."""

    name: str
    value: float
    weight: float | None

    @property
    def percent(self) -> float:
        """The bar's width in percent."""
        return round(max(0.0, min(1.0, self.value)) * 100, 1)


@dataclass(frozen=True)
class Result:
    """A search result: the memory, its four component bars and the final score."""

    memory: MemoryRow
    bars: list[Bar]
    final: float
    hops: int
    via: str


def results(response: svc.SearchMemoriesResponse, weights: pb.Weights | None) -> list[Result]:
    """A search's results with their bars (weights shown when the request set them)."""
    out = []
    for r in response.results:
        s = r.scores
        w = weights
        bars = [Bar("recency", s.recency, w.recency if w else None),
                Bar("importance", s.importance, w.importance if w else None),
                Bar("relevance", s.relevance, w.relevance if w else None),
                Bar("keyword", s.keyword, w.keyword if w else None)]
        out.append(Result(memory_row(r.memory), bars, s.final, r.hops, r.via_memory_id))
    return out


@dataclass(frozen=True)
class Dot:
    """A mark on a time line: x in the SVG's units, a label and where it links."""

    x: float
    y: float
    label: str
    title: str
    href: str = ""
    kind: str = ""


TIMELINE_WIDTH = 900.0
_MARGIN = 40.0


def _xs(moments: list[datetime]) -> list[float]:
    """Positions of moments along the line, oldest at the left margin, newest at the right."""
    if not moments:
        return []
    low, high = min(moments), max(moments)
    span = (high - low).total_seconds() or 1.0
    usable = TIMELINE_WIDTH - 2 * _MARGIN
    return [_MARGIN + usable * (m - low).total_seconds() / span if high > low else TIMELINE_WIDTH / 2
            for m in moments]


def save_line(response: svc.ListSavePointsResponse) -> list[Dot]:
    """The player's timelines (where each branched) and save points on one line."""
    marks: list[tuple[datetime, str, str, str, float]] = []
    for t in response.timelines:
        at = when(t.branched_at)
        if at is not None:
            title = f"timeline {t.timeline_id} from {t.parent_timeline_id}" + (f" (load of {t.save_id})"
                                                                              if t.save_id else "")
            marks.append((at, f"T{t.timeline_id}" + (" live" if t.live else ""), title, "timeline", 28.0))
    for s in response.save_points:
        at = when(s.saved_at)
        if at is not None:
            marks.append((at, s.save_id, f"save {s.save_id} on timeline {s.timeline_id} at {shown(at)}",
                          "save", 74.0))
    xs = _xs([m[0] for m in marks])
    return [Dot(x, y, label, title, kind=kind) for x, (_, label, title, kind, y) in zip(xs, marks, strict=True)]


def history_line(rows: list[MemoryRow], user_id: str) -> list[Dot]:
    """A memory's versions on a line by valid_at, each linking to its own page."""
    dated = [r for r in rows if r.valid_at is not None]
    xs = _xs([r.valid_at for r in dated if r.valid_at is not None])
    return [Dot(x, 50.0, f"v{i + 1}", f"{shown(r.valid_at)} → {shown(r.invalid_at) or 'now'}: {r.content}",
                href=f"/players/{user_id}/heroines/{r.heroine_id}/memories/{r.memory_id}",
                kind="valid" if r.valid else "closed")
            for i, (x, r) in enumerate(zip(xs, dated, strict=True))]


@dataclass(frozen=True)
class Edge:
    """A link drawn between two nodes of the graph."""

    x1: float
    y1: float
    x2: float
    y2: float
    kind: str


GRAPH_WIDTH = 640.0
GRAPH_HEIGHT = 420.0
_LABEL_CHARS = 14


def _short(text: str) -> str:
    return text[:_LABEL_CHARS] + ("…" if len(text) > _LABEL_CHARS else "")


def link_graph(center: MemoryRow, links: svc.ListLinksResponse, contents: dict[str, str],
               user_id: str) -> tuple[list[Dot], list[Edge]]:
    """The memory in the middle, its parents above, children below and related memories around, as an SVG graph."""
    mx, my = GRAPH_WIDTH / 2, GRAPH_HEIGHT / 2
    related = [lk.to_memory_id if lk.from_memory_id == center.memory_id else lk.from_memory_id
               for lk in links.related]
    placed: list[tuple[str, str, float, float]] = []
    for kind, ids, y in (("parent", [lk.from_memory_id for lk in links.parents], 50.0),
                         ("child", [lk.to_memory_id for lk in links.children], GRAPH_HEIGHT - 50.0)):
        placed += [(kind, other, (i + 1) * GRAPH_WIDTH / (len(ids) + 1), y) for i, other in enumerate(ids)]
    for i, other in enumerate(related):
        # Around the centre on an ellipse, starting to its right, clear of the parents' and children's rows.
        angle = 2 * math.pi * i / len(related)
        placed.append(("related", other, mx + 220.0 * math.cos(angle), my + 90.0 * math.sin(angle)))
    nodes = [Dot(mx, my, "●", center.content, kind="center")]
    edges = []
    for kind, other, x, y in placed:
        label = contents.get(other, other[:8])
        nodes.append(Dot(x, y, _short(label), label,
                         href=f"/players/{user_id}/heroines/{center.heroine_id}/memories/{other}", kind=kind))
        edges.append(Edge(mx, my, x, y, kind))
    return nodes, edges


@dataclass(frozen=True)
class ContextPreview:
    """BuildContext's answer as the page shows it."""

    text: str
    tokens: int
    budget: int
    method: str
    sections: list[tuple[str, int, int]]
    left_out: int


def context_preview(response: ctx_pb.BuildContextResponse) -> ContextPreview:
    """The block, its token count and, per section, how many memories and tokens it holds."""
    return ContextPreview(
        text=response.text, tokens=response.tokens, budget=response.token_budget,
        method=response.token_count_method,
        sections=[(s.title, len(s.items), s.tokens) for s in response.sections],
        left_out=len(response.left_out),
    )
