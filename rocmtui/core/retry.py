"""How long to wait before trying again: one rule for every loop that retries — the monitor's
probes of a failing target, the console's relay of rounds and its job list, the supervisor's
write of a build's outcome.

After `failures` failures in a row, wait `period * 2**(failures - 1)`, never more than `cap`:
the first retry comes one period later (a blip costs one round), then the wait doubles, so a
target that stays down costs one try every `cap` seconds. No failure: the usual `period`.
"""

from __future__ import annotations

__all__ = ["MAX_BACKOFF", "backoff"]

MAX_BACKOFF = 30.0  # seconds: the longest wait between two tries


def backoff(period: float, failures: int, cap: float = MAX_BACKOFF) -> float:
    """Seconds to wait before the next try, after `failures` failures in a row."""
    if failures <= 0:
        return period
    return min(cap, period * 2.0 ** min(failures - 1, 30))
