"""The history plot's time axis (issue 38): the unit that fits the span, ticks at times a
person reads, never "-0.00095 days ago"."""

from __future__ import annotations

import re

import pytest

from rocmtui.core.history.timeaxis import time_axis, unit_for_span

NOW = 1_765_000_000.0  # 2025-12-06 05:46:40 UTC


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    monkeypatch.setenv("TZ", "UTC")
    time.tzset()


@pytest.mark.parametrize(
    ("span", "unit"),
    [(90, "minutes"), (45 * 60, "minutes"), (5 * 3600, "hours"), (30 * 3600, "hours"),
     (3 * 86400, "days"), (90 * 86400, "days")],
)  # fmt: skip
def test_the_unit_fits_the_span(span: float, unit: str) -> None:
    assert unit_for_span(span)[0] == unit
    axis = time_axis(NOW - span, NOW)
    assert axis.label == f"{unit} ago"
    xs = [axis.x(NOW - span), axis.x(NOW)]
    assert xs[1] == 0 and 1 <= -xs[0] <= 120  # numbers a person reads, not 0.00095


def test_builds_of_the_last_minutes_tick_at_times_of_day() -> None:
    axis = time_axis(NOW - 8 * 60, NOW)
    assert axis.unit == "minutes"
    labels = [label for _, label in axis.ticks]
    assert labels == ["05:40", "05:42", "05:44", "05:46"]
    assert all(-8 <= x <= 0 for x, _ in axis.ticks)


def test_hours_and_days_tick_at_round_steps() -> None:
    hours = time_axis(NOW - 5 * 3600, NOW)
    assert [label for _, label in hours.ticks] == ["01:00", "02:00", "03:00", "04:00", "05:00"]
    days = time_axis(NOW - 10 * 86400, NOW)
    labels = [label for _, label in days.ticks]
    assert 2 <= len(labels) <= 6 and all(re.fullmatch(r"\d\d-\d\d", x) for x in labels)
