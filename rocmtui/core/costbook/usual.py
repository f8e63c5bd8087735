"""The usual time of a target x arch, for the stall verdicts: the p90 of its succeeded builds in
the cost book (a busy build silent past it is overdue), brought up to date and re-read at most
once a minute. Blocking (SQLite): called where the jobs are read.
"""

from __future__ import annotations

import threading

from rocmtui.core.costbook.book import CostBook, CostFilter
from rocmtui.core.costbook.cost import percentile
from rocmtui.core.jobs.store import JobStore
from rocmtui.core.states import JobState
from rocmtui.core.verdicts.verdict import Usual

USUAL_REFRESH = 60.0  # seconds a target x arch's usual time is reused


class UsualTimes:
    """The p90 of succeeded builds per target x arch, from the cost book (cached)."""

    def __init__(self, store: JobStore, refresh: float = USUAL_REFRESH) -> None:
        self.store = store
        self.refresh = refresh
        self._kept: dict[tuple[str, str], tuple[float, Usual | None]] = {}
        self._lock = threading.Lock()

    def of(self, target: str, arch: str, now: float) -> Usual | None:
        """The group's usual time, or None with no succeeded build to go by."""
        key = (target, arch)
        with self._lock:
            kept = self._kept.get(key)
            if kept is not None and now - kept[0] < self.refresh:
                return kept[1]
        usual = self._read(target, arch)
        with self._lock:
            self._kept[key] = (now, usual)
        return usual

    def _read(self, target: str, arch: str) -> Usual | None:
        try:
            book = CostBook(self.store)
            book.sync()  # the builds that ended since (incremental; a write, so not read-only)
            rows = book.rows(CostFilter(target=target, arch=arch))
        except Exception:  # an unreadable cost book leaves only the busy threshold
            return None
        done = [r.duration for r in rows if r.outcome == JobState.SUCCEEDED.value]
        if not done:
            return None
        return Usual(p90_seconds=percentile(done, 0.9), builds=len(done))


__all__ = ["USUAL_REFRESH", "UsualTimes"]
