"""The grpcurl commands of docs/guide/dialogue.md, run as written against the live server (real grpcurl)."""

from __future__ import annotations

import json
import re

from npc_memory.domain.model import Scope
from test_grpcurl import ROOT, _grpcurl

GUIDE = ROOT / "docs" / "guide" / "dialogue.md"


def _commands() -> list[str]:
    """The guide's ```sh blocks, continuation lines joined."""
    blocks = re.findall(r"```sh\n(.*?)```", GUIDE.read_text(encoding="utf-8"), flags=re.DOTALL)
    return [b.replace("\\\n", " ").strip() for b in blocks]


async def test_the_guides_dialogue_is_stored_continued_and_found(server_port: int, scope: Scope) -> None:
    """Store two turns, continue with a third at position 2, then a search finds the reply by its question."""
    store, more, search = _commands()
    code, out, err = await _grpcurl(store, server_port, scope)
    assert code == 0, err
    first = json.loads(out)["turns"]
    assert [t["outcome"] for t in first] == ["STORE_OUTCOME_CREATED"] * 2
    code, out, err = await _grpcurl(more, server_port, scope)
    assert code == 0, err
    assert [t["outcome"] for t in json.loads(out)["turns"]] == ["STORE_OUTCOME_CREATED"]
    code, out, err = await _grpcurl(store, server_port, scope)  # the same request again: the stored turns
    assert code == 0, err
    assert [t["memory_id"] for t in json.loads(out)["turns"]] == [t["memory_id"] for t in first]
    code, out, err = await _grpcurl(search, server_port, scope)
    assert code == 0, err
    hits = json.loads(out)["results"]
    assert "응, 지난 화요일에!" in [h["memory"]["content"] for h in hits]
    reply = next(h["memory"] for h in hits if h["memory"]["content"] == "응, 지난 화요일에!")
    assert (reply["tier"], reply["dialogue_id"], reply["dialogue_position"], reply["speaker_name"]) == (
        "TIER_SOURCE", "day-12-evening", 1, "민수")
