"""The window emulation's first row rebuilds the text the service embeds a dialogue turn with."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from npc_memory.domain.dialogue import embedding_texts
from npc_memory.domain.model import ContentType, NewMemory, Speaker, Subject

from benchmarks.conversation.window import WINDOWS, texts

SESSION = [("user", "안녕!"), ("companion", "경주 다녀왔다며? 언제 갔었어?"), ("user", "응, 지난 화요일에!"),
           ("companion", "I grew up in a fishing village."), ("user", "Yes, last Tuesday!")]


def _conversation() -> dict[str, Any]:
    turns = [{"id": f"t{i}", "speaker": who, "text": text} for i, (who, text) in enumerate(SESSION)]
    return {"companion_id": "letia", "sessions": [{"index": 0, "date": "2024-09-14T20:00:00+00:00", "turns": turns}]}


def test_the_first_window_is_the_services_text_and_wider_ones_hold_more_lines() -> None:
    at = datetime(2024, 9, 14, 20, tzinfo=UTC)
    facts = [NewMemory(Speaker.USER if who == "user" else Speaker.HEROINE,
                       Subject.USER if who == "user" else Subject.HEROINE, "user" if who == "user" else "letia",
                       ContentType.FACT, text, valid_at=at) for who, text in SESSION]
    service = embedding_texts(facts, [True] * len(facts), at, timedelta(minutes=30), None, with_answer=True,
                              label="name", heroine="letia")
    made = texts(_conversation(), WINDOWS[0])
    assert [made[f"t{i}"] for i in range(len(SESSION))] == service
    assert made["t1"] == "나: 안녕!\nLetia: 경주 다녀왔다며? 언제 갔었어?\n나: 응, 지난 화요일에!"
    wider = texts(_conversation(), WINDOWS[1])
    assert wider["t4"] == "나: 응, 지난 화요일에!\nLetia: I grew up in a fishing village.\nMe: Yes, last Tuesday!"
