"""The text a stated dialogue's turn is embedded over (domain/dialogue.py): pure, no database."""

from __future__ import annotations

from npc_memory.domain.dialogue import Line, asks, speaker_label, turn_text, turn_views
from npc_memory.domain.model import Speaker

Q = Line(Speaker.HEROINE, "경주 다녀왔다며? 언제 갔었어?")
A = Line(Speaker.USER, "응, 지난 화요일에!")
NEXT = Line(Speaker.HEROINE, "좋았겠다~")


def test_a_speaker_is_named_as_the_game_shows_or_by_role_and_heroine() -> None:
    """The given name first; else "나" in a Korean line and "Me" otherwise for the player, the heroine's id."""
    assert speaker_label(Line(Speaker.USER, "I went to Gyeongju", "Minsu"), "letia") == "Minsu"
    assert speaker_label(A, "letia") == "나"
    assert speaker_label(Line(Speaker.USER, "Last Tuesday!"), "mara") == "Me"
    assert speaker_label(Q, "letia") == "Letia"


def test_a_turn_takes_the_turn_before_and_a_question_its_answer() -> None:
    """Previous line, the line, and (only for a question) the line after it: each after its speaker."""
    assert turn_text(Q, None, A, "letia") == "Letia: 경주 다녀왔다며? 언제 갔었어?\n나: 응, 지난 화요일에!"
    assert turn_text(A, Q, NEXT, "letia") == "Letia: 경주 다녀왔다며? 언제 갔었어?\n나: 응, 지난 화요일에!"
    assert turn_text(NEXT, A, None, "letia") == "나: 응, 지난 화요일에!\nLetia: 좋았겠다~"
    assert turn_text(Line(Speaker.USER, "Hi", "Minsu"), None, None, "mara") == "Minsu: Hi"


def test_a_turn_is_seen_alone_in_context_and_between_its_neighbours() -> None:
    """The three views a turn's vector is the mean of; a position not known (a gap) is no neighbour."""
    assert turn_views(A, Q, NEXT, "letia") == (
        "나: 응, 지난 화요일에!", "Letia: 경주 다녀왔다며? 언제 갔었어?\n나: 응, 지난 화요일에!",
        "Letia: 경주 다녀왔다며? 언제 갔었어?\n나: 응, 지난 화요일에!\nLetia: 좋았겠다~")
    assert turn_views(NEXT, None, None, "letia") == ("Letia: 좋았겠다~",) * 3


def test_a_question_ends_with_a_question_mark_even_before_closing_marks() -> None:
    """A question mark (ASCII or full-width) at the end, trailing "!~.…)" allowed; a statement is none."""
    assert all(asks(t) for t in ("언제 갔었어?", "진짜\uff1f", "Really?!", "뭐 먹었어?~"))
    assert not any(asks(t) for t in ("응, 지난 화요일에!", "그렇구나"))
