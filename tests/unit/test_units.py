"""Every unit's wording, pinned once (rocmtui.core.text.units, rocmtui.core.retry): the console and
the headless commands print these strings, so a change here is a change on every screen."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from rocmtui.core.retry import MAX_BACKOFF, backoff
from rocmtui.core.text.units import (
    fmt_age,
    fmt_bytes,
    fmt_clock,
    fmt_latency,
    fmt_seconds,
    fmt_step_duration,
    fmt_utc_clock,
    fmt_utc_stamp,
    fmt_when,
)

NOW = 1_764_502_200.0  # 2025-11-30 11:30:00 UTC


def test_ages_in_whole_seconds() -> None:
    shown = [fmt_age(s) for s in (-3, 0, 4.9, 59, 61, 3599, 2 * 3600 + 300, 3 * 86400 + 3600)]
    assert shown == ["0s", "0s", "4s", "59s", "1m01s", "59m59s", "2h05m", "3d01h"]
    assert fmt_age(None) == "—"


def test_short_spans_to_the_tenth() -> None:
    spans = (0, 0.004, 0.04, 0.25, 0.5, 3, 3.0, 12.34, 59.94, 59.96, 90, 7500)
    shown = [fmt_seconds(s) for s in spans]
    assert shown == [
        "0s", "0s", "0.04s", "0.25s", "0.5s", "3s", "3s", "12.3s", "59.9s", "1m00s", "1m30s",
        "2h05m",
    ]  # fmt: skip
    assert fmt_seconds(None) == "—"


def test_step_durations_take_five_cells() -> None:
    shown = [fmt_step_duration(s) for s in (0.04, 12.34, 59.9, 192.0, 7500.0)]
    assert shown == [" 0.0s", "12.3s", "59.9s", "3m12s", "2h05m"]


def test_latency_in_milliseconds_below_a_second() -> None:
    shown = [fmt_latency(s) for s in (0.0, 0.0004, 0.012, 0.9994, 0.9996, 1.23, 20.0, 75.0)]
    assert shown == ["0ms", "0ms", "12ms", "999ms", "1s", "1.2s", "20s", "1m15s"]
    assert fmt_latency(None) == "—"


def test_bytes_in_binary_steps_of_three_digits() -> None:
    sizes = (0, 512, 999, 1000, 1536, 10 * 1024**2, 120 * 1024**3, 3 * 1024**4, 5000 * 1024**4)
    shown = [fmt_bytes(n) for n in sizes]
    assert shown == ["0B", "512B", "999B", "1.0K", "1.5K", "10.0M", "120.0G", "3.0T", "5000.0T"]
    assert fmt_bytes(None) == "—"


def _in_zone(code: str, zone: str) -> str:
    """`code`'s printed answer in a fresh interpreter whose local time zone is `zone`."""
    env = {**os.environ, "TZ": zone}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


def test_times_of_day_in_the_operators_zone() -> None:
    code = "from rocmtui.core.text.units import fmt_clock as c; print(c(1_764_502_200.0), c(None))"
    assert _in_zone(code, "UTC") == "11:30:00 —"
    assert _in_zone(code, "America/Los_Angeles") == "03:30:00 —"


def test_starts_of_today_and_of_another_day() -> None:
    """Local time: the time of day for today, the date and minute for any other day."""
    code = (
        "from rocmtui.core.text.units import fmt_when as c; N = 1_764_502_200.0\n"
        "print(c(N - 600, N), c(N - 86400, N), c(N, N + 13 * 3600), c(None), sep='|')"
    )
    assert _in_zone(code, "UTC") == "11:20:00|2025-11-29 11:30|2025-11-30 11:30|—"
    # the day is the operator's: 13 h after 11:30 UTC is another day in UTC, the same one in
    # Los Angeles (03:30 and 16:30 there)
    assert _in_zone(code, "America/Los_Angeles") == "03:20:00|2025-11-29 03:30|03:30:00|—"


def test_a_start_without_now_reads_the_real_day() -> None:
    assert len(fmt_when(time.time())) == len("13:02:11")
    assert fmt_when(NOW) == time.strftime("%Y-%m-%d %H:%M", time.localtime(NOW))
    assert fmt_clock(NOW) == time.strftime("%H:%M:%S", time.localtime(NOW))


def test_utc_times_for_logs_and_records() -> None:
    assert fmt_utc_clock(NOW) == "11:30:00 UTC"
    assert fmt_utc_stamp(NOW) == "2025-11-30 11:30:00 UTC"


@pytest.mark.parametrize(
    ("period", "failures", "wait"),
    [
        (2.0, 0, 2.0),  # no failure: the usual period
        (2.0, 1, 2.0),  # the first retry one period later
        (2.0, 2, 4.0),
        (2.0, 4, 16.0),
        (2.0, 5, MAX_BACKOFF),  # 32 s, capped
        (2.0, 10_000, MAX_BACKOFF),
        (0.5, 3, 2.0),
        (60.0, 1, MAX_BACKOFF),  # a period above the cap: never waits longer than the cap
    ],
)
def test_one_backoff_rule(period: float, failures: int, wait: float) -> None:
    assert backoff(period, failures) == wait


def test_backoff_under_another_cap() -> None:
    assert [backoff(0.5, n, cap=5.0) for n in range(1, 6)] == [0.5, 1.0, 2.0, 4.0, 5.0]
