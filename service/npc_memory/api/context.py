"""BuildContext: request validation and the block's wire form."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from npc_memory_client.v1 import context_pb2 as ctx_pb

from npc_memory.api import convert
from npc_memory.api.requests import MAX_QUERY_CHARS
from npc_memory.api.validation import Checker
from npc_memory.domain.context import COUNTING_METHOD, LANGUAGES, ContextBlock, Section
from npc_memory.domain.model import Scope

DEFAULT_BUDGET = 400
MAX_BUDGET = 32_000
KINDS = {
    Section.ABOUT_PLAYER: ctx_pb.CONTEXT_SECTION_KIND_ABOUT_PLAYER,
    Section.ABOUT_HEROINE: ctx_pb.CONTEXT_SECTION_KIND_ABOUT_HEROINE,
    Section.OPINIONS: ctx_pb.CONTEXT_SECTION_KIND_OPINIONS,
    Section.RELEVANT: ctx_pb.CONTEXT_SECTION_KIND_RELEVANT,
    Section.RECENT: ctx_pb.CONTEXT_SECTION_KIND_RECENT,
}


@dataclass(frozen=True)
class ContextRequest:
    """A validated BuildContext call."""

    scope: Scope
    utterance: str
    budget: int
    include_shared: bool
    language: str
    now: datetime


def parse_context(request: ctx_pb.BuildContextRequest) -> ContextRequest:
    """Validate a BuildContext request."""
    c = Checker()
    scope = c.scope("scope", request.scope, request.HasField("scope"))
    utterance = c.text("utterance", request.utterance, max_chars=MAX_QUERY_CHARS, required=False)
    budget = request.token_budget or DEFAULT_BUDGET
    if not 1 <= budget <= MAX_BUDGET:
        c.bad("token_budget", f"must be between 1 and {MAX_BUDGET} (0 means {DEFAULT_BUDGET})")
    language = request.language or LANGUAGES[0]
    if language not in LANGUAGES:
        c.bad("language", f"must be one of {', '.join(LANGUAGES)} (empty means {LANGUAGES[0]})")
    now = c.timestamp("now", request.now, request.HasField("now")) or datetime.now(UTC)
    c.done()
    return ContextRequest(scope, utterance, budget, request.include_shared, language, now)


def context_block(block: ContextBlock, asked: Scope) -> ctx_pb.BuildContextResponse:
    """The wire form of a block; memories of other scopes carry shared_from.

    Built in place: each memory message built on its own would be copied into its item, the item into its section
    and the section into the response, a copy per level for every item. A held scope's memories come back
    block after block, so their messages are merged from their bytes (``convert.fill_answered``).
    """
    out = ctx_pb.BuildContextResponse(text=block.text, tokens=block.tokens, token_budget=block.budget,
                                      token_count_method=COUNTING_METHOD)
    for s in block.sections:
        section = out.sections.add(kind=KINDS[s.section], title=s.title, text=s.text, tokens=s.tokens)
        for i in s.items:
            item = section.items.add(score=i.score, text=i.line, tokens=i.tokens)
            convert.fill_answered(item.memory, i.memory, asked)
    for x in block.left_out:
        out.left_out.add(memory_id=str(x.memory_id), section=KINDS[x.section], tokens=x.tokens)
    return out
