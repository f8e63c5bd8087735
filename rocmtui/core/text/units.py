"""How every unit reads, written once: the console and the headless commands print the same
string for the same value (tests/unit/test_units.py pins each).

- ages and long durations: `fmt_age` (4s, 3m12s, 2h05m, 3d04h), whole seconds: an age that
  ticks in tenths would redraw every cell on every refresh;
- short spans measured or configured to the tenth (deadlines, how long an answer took):
  `fmt_seconds` (0.5s, 3s, 12.3s; from a minute on, as an age);
- a build step's duration, in five cells so a column of them lines up: `fmt_step_duration`;
- latency: `fmt_latency` (12ms below a second, 1.2s from one);
- bytes: `fmt_bytes` (binary steps, at most three digits before the point: 512B, 1.5K, 120.0G,
  as `ls -h` and `df -h` write them);
- wall-clock times in the operator's time zone: `fmt_clock` (13:02:11), and `fmt_when` for a
  start that may be days old (13:02:11 today, 2025-11-29 23:10 on another day); in UTC for
  what is written into logs and records, read later by operators in other zones:
  `fmt_utc_clock` (13:02:11 UTC) and `fmt_utc_stamp` (2025-11-30 13:02:11 UTC).

A missing value (None) is a dash everywhere.
"""

from __future__ import annotations

import time

__all__ = [
    "MISSING",
    "fmt_age",
    "fmt_bytes",
    "fmt_clock",
    "fmt_latency",
    "fmt_seconds",
    "fmt_step_duration",
    "fmt_utc_clock",
    "fmt_utc_stamp",
    "fmt_when",
]

MISSING = "—"


def fmt_age(seconds: float | None) -> str:
    """A compact age or duration in whole seconds: 4s, 3m12s, 2h05m, 3d04h."""
    if seconds is None:
        return MISSING
    s = int(max(0.0, seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


def fmt_seconds(seconds: float | None) -> str:
    """A short span to the tenth of a second (0.5s, 3s, 12.3s), to the hundredth below one
    (0.04s: a probe round of 40 ms is not "0s"); a minute or more as an age."""
    if seconds is None:
        return MISSING
    seconds = max(0.0, seconds)
    if round(seconds, 1) >= 60:
        return fmt_age(round(seconds))
    return f"{round(seconds, 2 if seconds < 1 else 1):g}s"


def fmt_step_duration(seconds: float) -> str:
    """A build step's duration in five cells: ` 0.4s`, `12.3s`, `3m12s`, `2h05m`."""
    return (f"{seconds:.1f}s" if seconds < 59.95 else fmt_age(seconds)).rjust(5)


def fmt_latency(seconds: float | None) -> str:
    """How long an answer took: milliseconds below a second (12ms), tenths above (1.2s)."""
    if seconds is None:
        return MISSING
    if seconds < 0.9995:
        return f"{max(0.0, seconds) * 1000:.0f}ms"
    return fmt_seconds(seconds)


def fmt_bytes(n: int | None) -> str:
    """Bytes in the largest binary unit that keeps three digits: 512B, 1.5K, 120.0G."""
    if n is None:
        return MISSING
    value = float(n)
    for unit in ("B", "K", "M", "G", "T"):
        if value < 1000 or unit == "T":
            return f"{value:.0f}{unit}" if unit == "B" else f"{value:.1f}{unit}"
        value /= 1024
    return f"{value:.1f}T"  # unreachable: T takes every size above


def fmt_clock(epoch: float | None) -> str:
    """A time of day in the operator's time zone: 13:02:11 (a moment of the last hours: since
    when a node is down, which of two panes started first)."""
    if epoch is None:
        return MISSING
    return time.strftime("%H:%M:%S", time.localtime(epoch))


def fmt_when(epoch: float | None, now: float | None = None) -> str:
    """When something started, in the operator's time zone: the time of day when it is today
    (13:02:11), the date and the minute on any other day (2025-11-29 23:10)."""
    if epoch is None:
        return MISSING
    when = time.localtime(epoch)
    today = time.localtime(time.time() if now is None else now)
    if (when.tm_year, when.tm_yday) == (today.tm_year, today.tm_yday):
        return time.strftime("%H:%M:%S", when)
    return time.strftime("%Y-%m-%d %H:%M", when)


def fmt_utc_clock(epoch: float) -> str:
    """A time of day in UTC for evidence lines: 13:02:11 UTC."""
    return time.strftime("%H:%M:%S UTC", time.gmtime(epoch))


def fmt_utc_stamp(epoch: float) -> str:
    """A date and time in UTC for log lines and headers: 2025-11-30 13:02:11 UTC."""
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(epoch))
