"""A bounded window of each node's recent readings (its vitals, or that it did not answer).

A verdict needs the silence's history, not one figure: "near 0% CPU through the silence" and
"unreachable since the silence began" are statements about every round since the build last
wrote. The window keeps at most `max_readings` per node, at least `spacing` seconds apart (the
newest always replaces a too-close last one, so the latest figures are never stale): at the
default spacing of stall_after / 32, the window covers about eight stall thresholds of silence
at any refresh rate, in a few hundred small structs per node.
"""

from __future__ import annotations

import threading
from collections import deque

from rocmtui.core.verdicts.verdict import Reading

MAX_READINGS = 256


def spacing_for(stall_after: float) -> float:
    """The spacing that makes `MAX_READINGS` cover about eight `stall_after` silences."""
    return min(60.0, max(1.0, stall_after / 32.0))


class VitalsWindow:
    """Recent readings per node, oldest first (thread-safe: the probe round adds, the job
    readers read)."""

    def __init__(self, spacing: float = 1.0, max_readings: int = MAX_READINGS) -> None:
        self.spacing = spacing
        self.max_readings = max_readings
        self._by_node: dict[str, deque[Reading]] = {}
        self._lock = threading.Lock()

    def add(self, node: str, reading: Reading) -> None:
        """Keep `reading` (one older than the last kept one is ignored)."""
        with self._lock:
            kept = self._by_node.setdefault(node, deque(maxlen=self.max_readings))
            if kept and reading.taken_at < kept[-1].taken_at:
                return
            # keep the last one when it stands `spacing` after the one before it, else replace
            if len(kept) >= 2 and kept[-1].taken_at - kept[-2].taken_at < self.spacing:
                kept.pop()
            kept.append(reading)

    def readings(self, node: str) -> list[Reading]:
        """The node's kept readings, oldest first."""
        with self._lock:
            return list(self._by_node.get(node, ()))

    def oom_kills_at(self, node: str, when: float) -> int | None:
        """The node's OOM count at `when`: the last reading at or before it, else the first
        after it (kills between `when` and that reading are then not seen), else None."""
        before: int | None = None
        for reading in self.readings(node):
            count = reading.vitals.oom_kills_total if reading.vitals is not None else None
            if count is None:
                continue
            if reading.taken_at <= when:
                before = count
            else:
                return before if before is not None else count
        return before

    def forget_except(self, nodes: set[str]) -> None:
        """Drop nodes no longer in the fleet."""
        with self._lock:
            for name in set(self._by_node) - nodes:
                del self._by_node[name]


__all__ = ["MAX_READINGS", "VitalsWindow", "spacing_for"]
