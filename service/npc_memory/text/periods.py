"""Periods written in a question ("지난달에", "작년 8월에", "last May") as a date range before ``now``.

A question that names when something happened ("지난주에 내가 뭐 먹었지?") is answered by a memory from
that period; the range lets a search prefer or keep only memories valid then. Pure, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

_MONTHS_EN = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
              "november", "december")
_MONTH_EN = "|".join(_MONTHS_EN)


@dataclass(frozen=True)
class Period:
    """``[start, end)`` in the timezone of ``now``."""

    start: datetime
    end: datetime


def _day(now: datetime) -> datetime:
    return now.replace(hour=0, minute=0, second=0, microsecond=0)


def _month(year: int, month: int, like: datetime) -> Period:
    start = like.replace(year=year, month=month, day=1, hour=0, minute=0, second=0, microsecond=0)
    end = start.replace(year=year + 1, month=1) if month == 12 else start.replace(month=month + 1)
    return Period(start, end)


def _past_month(month: int, now: datetime, skip_current: bool) -> Period:
    """The latest ``month`` before now (this year if it has begun, else last year)."""
    year = now.year if month < now.month or (month == now.month and not skip_current) else now.year - 1
    return _month(year, month, now)


def _week(now: datetime, weeks_back: int) -> Period:
    monday = _day(now) - timedelta(days=now.weekday() + 7 * weeks_back)
    return Period(monday, monday + timedelta(days=7))


def _previous_month(now: datetime) -> Period:
    year, month = (now.year, now.month - 1) if now.month > 1 else (now.year - 1, 12)
    return _month(year, month, now)


def _last_weekend(now: datetime) -> Period:
    saturday = _week(now, 1).start + timedelta(days=5)
    return Period(saturday, saturday + timedelta(days=2))


def _days_back(days: int) -> Callable[[datetime], Period]:
    def period(now: datetime) -> Period:
        day = _day(now) - timedelta(days=days)
        return Period(day, day + timedelta(days=1))
    return period


# Checked in order: "the day before yesterday" before "yesterday", "last weekend" before "last week".
_RELATIVE: tuple[tuple[re.Pattern[str], Callable[[datetime], Period]], ...] = (
    (re.compile(r"그저께|그제|the day before yesterday"), _days_back(2)),
    (re.compile(r"어제|yesterday"), _days_back(1)),
    (re.compile(r"지난\s*주말|last weekend"), _last_weekend),
    (re.compile(r"지난\s*주|저번\s*주|last week"), lambda now: _week(now, 1)),
    (re.compile(r"이번\s*주|this week"), lambda now: _week(now, 0)),
    (re.compile(r"지난\s*달|저번\s*달|last month"), _previous_month),
    (re.compile(r"이번\s*달|this month"), lambda now: _month(now.year, now.month, now)),
)


def _relative(text: str, now: datetime) -> Period | None:
    return next((period(now) for pattern, period in _RELATIVE if pattern.search(text)), None)


def _named_month(text: str, now: datetime) -> Period | None:
    ko = re.search(r"(작년|올해|재작년)?\s*(1[0-2]|[1-9])\s*월", text)
    if ko:
        month = int(ko.group(2))
        offset = {"작년": 1, "재작년": 2, "올해": 0}.get(ko.group(1) or "")
        if offset is None:
            return _past_month(month, now, skip_current=False)
        return _month(now.year - offset, month, now)
    en = re.search(rf"\b(last|this|in|back in)?\s*({_MONTH_EN})\b(?:\s+(\d{{4}}))?", text)
    if en and not (en.group(2) == "may" and en.group(1) is None and en.group(3) is None):  # "may" the verb
        month = _MONTHS_EN.index(en.group(2)) + 1
        if en.group(3):
            return _month(int(en.group(3)), month, now)
        if en.group(1) == "this":
            return _month(now.year, month, now)
        return _past_month(month, now, skip_current=en.group(1) == "last")
    return None


def period_in(text: str, now: datetime) -> Period | None:
    """The period a question names, relative to ``now``, or None if it names none."""
    lowered = text.lower()
    return _relative(lowered, now) or _named_month(lowered, now)
