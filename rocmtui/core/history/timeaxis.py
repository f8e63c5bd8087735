"""The time axis of a plot of builds over time: the unit that fits the span, and ticks a
person reads.

A span of minutes drawn in days reads "-0.00095 ... -0.00052 days ago": nobody can say when a
build ran. The axis is drawn in minutes, hours or days before now, whichever keeps the span's
numbers between about 1 and 100, and its ticks are labelled with the time of day (`13:40`)
or, over days, the date (`12-04`), at round steps (every 5, 10, 15, 30 minutes; 1, 2, 3, 6,
12 hours; 1, 2, 7 days), in the operator's time zone.
"""

from __future__ import annotations

import time

from msgspec import Struct

MINUTE = 60.0
HOUR = 3600.0
DAY = 86400.0

#: Round tick steps (seconds), finest first: the first that gives at most `MAX_TICKS` wins.
STEPS = (
    MINUTE,
    2 * MINUTE,
    5 * MINUTE,
    10 * MINUTE,
    15 * MINUTE,
    30 * MINUTE,
    HOUR,
    2 * HOUR,
    3 * HOUR,
    6 * HOUR,
    12 * HOUR,
    DAY,
    2 * DAY,
    7 * DAY,
    14 * DAY,
    28 * DAY,
)
MAX_TICKS = 6


class TimeAxis(Struct, frozen=True):
    """Where points go (`x(epoch)`: `unit`s before now, negative) and the labelled ticks."""

    unit: str  # "minutes", "hours" or "days"
    scale: float  # seconds per unit
    now: float
    ticks: tuple[tuple[float, str], ...]  # (x, label)

    @property
    def label(self) -> str:
        """The axis title: `minutes ago`."""
        return f"{self.unit} ago"

    def x(self, epoch: float) -> float:
        """An instant on the axis."""
        return (epoch - self.now) / self.scale


def unit_for_span(span: float) -> tuple[str, float]:
    """(unit, seconds per unit) for a span of `span` seconds: minutes under 2 h, hours under
    2 days, days beyond."""
    if span < 2 * HOUR:
        return "minutes", MINUTE
    if span < 2 * DAY:
        return "hours", HOUR
    return "days", DAY


def _label(epoch: float, step: float) -> str:
    when = time.localtime(epoch)
    if step >= DAY:
        return time.strftime("%m-%d", when)
    return time.strftime("%H:%M", when)


def time_axis(earliest: float, now: float) -> TimeAxis:
    """The axis from `earliest` (the oldest point) to `now`."""
    span = max(now - earliest, MINUTE)
    unit, scale = unit_for_span(span)
    step = next((s for s in STEPS if span / s <= MAX_TICKS), STEPS[-1])
    # round ticks in local time: offset by the zone so 13:00 is a tick, not 13:00 UTC
    offset = time.localtime(now).tm_gmtoff
    first = ((earliest + offset) // step + 1) * step - offset
    ticks = []
    t = first
    while t <= now:
        ticks.append(((t - now) / scale, _label(t, step)))
        t += step
    return TimeAxis(unit=unit, scale=scale, now=now, ticks=tuple(ticks))


__all__ = ["TimeAxis", "time_axis", "unit_for_span"]
