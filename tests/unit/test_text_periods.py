"""Periods named in a question become date ranges before the moment of asking."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from npc_memory.text.periods import Period, period_in

NOW = datetime(2025, 2, 12, 20, 0, tzinfo=UTC)  # a Wednesday


def _range(start: tuple[int, int, int], end: tuple[int, int, int]) -> Period:
    return Period(datetime(*start, tzinfo=UTC), datetime(*end, tzinfo=UTC))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("지난주에 내가 뭐 먹었지?", _range((2025, 2, 3), (2025, 2, 10)), id="지난주"),
        pytest.param("What did I eat last week?", _range((2025, 2, 3), (2025, 2, 10)), id="last-week"),
        pytest.param("지난달에 어디 갔었지?", _range((2025, 1, 1), (2025, 2, 1)), id="지난달"),
        pytest.param("Where did I go last month?", _range((2025, 1, 1), (2025, 2, 1)), id="last-month"),
        pytest.param("작년 8월에 어디 놀러 갔지?", _range((2024, 8, 1), (2024, 9, 1)), id="작년-8월"),
        pytest.param("올해 1월에 뭐 샀지?", _range((2025, 1, 1), (2025, 2, 1)), id="올해-1월"),
        pytest.param("10월에 아팠던 거 기억나?", _range((2024, 10, 1), (2024, 11, 1)), id="bare-month-last-year"),
        pytest.param("Where did I travel last August?", _range((2024, 8, 1), (2024, 9, 1)), id="last-august"),
        pytest.param("What did I buy in January?", _range((2025, 1, 1), (2025, 2, 1)), id="in-january"),
        pytest.param("What did I give you last February?", _range((2024, 2, 1), (2024, 3, 1)), id="last-feb"),
        pytest.param("어제 뭐 했더라?", _range((2025, 2, 11), (2025, 2, 12)), id="어제"),
        pytest.param("the day before yesterday", _range((2025, 2, 10), (2025, 2, 11)), id="day-before-yesterday"),
        pytest.param("지난 주말에 뭐 했지?", _range((2025, 2, 8), (2025, 2, 10)), id="지난-주말"),
    ],
)
def test_named_periods_become_ranges(text: str, expected: Period) -> None:
    """Relative and month periods, in Korean and English, map to the calendar range they name."""
    assert period_in(text, NOW) == expected


@pytest.mark.parametrize(
    "text",
    ["내가 무슨 일 하는 사람이라고 했지?", "What do I do for a living?", "May I ask what my job is?", "요즘 뭐 마셔?"],
)
def test_questions_without_a_period_have_none(text: str) -> None:
    """A question naming no period (and "May I", the verb) gives None."""
    assert period_in(text, NOW) is None


def test_the_year_rolls_back_in_january() -> None:
    """Asked in January, "last month" is December of the previous year."""
    january = datetime(2025, 1, 15, tzinfo=UTC)
    assert period_in("지난달에", january) == _range((2024, 12, 1), (2025, 1, 1))
