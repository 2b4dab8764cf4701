"""The game's clock: game days on the service's time axis through one fixed epoch.

Day ``d`` is the instant GAME_EPOCH + d x 86,400 s, so a game that runs its own calendar (day 1, day 2 ...,
pausing, skipping or running fast) stores and searches with game days while every column stays a timestamp:
validity, ``as_of`` and recency (which then decays in game days) need nothing else. Wall time stays in
created_at/updated_at.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

GAME_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
"""Game day 0."""
MIN_GAME_DAY = -730_000.0
"""Earliest game day accepted (year 1 is day -730,119)."""
MAX_GAME_DAY = 2_900_000.0
"""Latest game day accepted (year 9999 ends on day 2,921,939)."""


def game_instant(day: float) -> datetime:
    """The instant of game day ``day``."""
    return GAME_EPOCH + timedelta(days=day)


def game_day(when: datetime) -> float:
    """The game day of an instant."""
    return (when - GAME_EPOCH) / timedelta(days=1)
