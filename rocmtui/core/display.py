"""Small pure formatters shared by the console and the headless commands."""

from __future__ import annotations


def fmt_age(seconds: float | None) -> str:
    """A compact age: 4s, 3m12s, 2h05m, 3d04h."""
    if seconds is None:
        return "—"
    s = int(max(0.0, seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"
