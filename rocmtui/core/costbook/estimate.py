"""Estimates where they matter: the bake dialog (a build about to run) and a running build's
row. `CostEstimates` answers from the job store's cost book, bringing it up to date and
reading a group's rows at most every `REFRESH_SECONDS` (the jobs round asks every few seconds;
a group's history changes when one of its builds ends). Blocking (SQLite): call it where the
console reads jobs, in a worker.
"""

from __future__ import annotations

import threading
import time

from rocmtui.core.config.fleetfile import DEFAULT_RETENTION_DAYS
from rocmtui.core.costbook.book import CostBook, CostFilter
from rocmtui.core.costbook.cost import OVERTIME_FACTOR, CostPoint, estimate, overtime_limit
from rocmtui.core.jobs.store import JobStore
from rocmtui.core.text.units import fmt_age

REFRESH_SECONDS = 60.0
OVERTIME_MARK = "! far past usual"  # how a running build's row starts its overtime flag
Group = tuple[str, str, str]


class CostEstimates:
    """Estimates per target × arch × node, kept `refresh` seconds (thread-safe)."""

    def __init__(
        self,
        store: JobStore,
        retention_days: float = DEFAULT_RETENTION_DAYS,
        refresh: float = REFRESH_SECONDS,
    ) -> None:
        self.book = CostBook(store, retention_days)
        self.refresh = refresh
        self._synced_at: float | None = None
        self._points: dict[Group, tuple[float, list[CostPoint]]] = {}
        self._lock = threading.Lock()

    def points(
        self, target: str, arch: str, node: str, now: float | None = None
    ) -> list[CostPoint]:
        """The group's finished builds as the statistics see them (oldest first)."""
        now = time.time() if now is None else now
        key = (target, arch, node)
        with self._lock:
            if self._synced_at is None or now - self._synced_at >= self.refresh:
                self.book.sync(now)
                self._synced_at = now
                self._points.clear()
            kept = self._points.get(key)
            if kept is None or now - kept[0] >= self.refresh:
                rows = self.book.rows(CostFilter(target=target, arch=arch, node=node))
                kept = (now, [r.point() for r in rows])
                self._points[key] = kept
            return kept[1]

    def before_start(self, target: str, arch: str, node: str, now: float | None = None) -> str:
        """For the bake dialog: `last such build ≈ 2h10m, warm as last time (p90 2h40m)`, or
        that there is none to go by."""
        found = estimate(self.points(target, arch, node, now))
        if found is None:
            return f"no earlier build of {target} {arch} on {node} to go by"
        return f"such a build took {found.describe()} (p90 {fmt_age(found.p90)})"

    def running(
        self,
        target: str,
        arch: str,
        node: str,
        elapsed: float,
        now: float | None = None,
        eta: float | None = None,
    ) -> str | None:
        """For a running build's row, short (the row has little room): `≈ 2h10m, warm` (the
        condition of the last such build); past p90 × 1.5 of the slowest condition seen,
        `! far past usual (5h54m at most)` instead; and when the ninja ETA (`eta`, seconds
        left) would end it past that, `! ETA past usual (...)` (None: nothing to go by)."""
        points = self.points(target, arch, node, now)
        limit = overtime_limit(points)
        if limit is not None:
            usual = fmt_age(limit / OVERTIME_FACTOR)
            if elapsed > limit:
                return f"{OVERTIME_MARK} ({usual} at most)"
            if eta is not None and elapsed + eta > limit:
                return f"! ETA past usual ({fmt_age(elapsed + eta)}, {usual} at most)"
        found = estimate(points)
        return None if found is None else found.short()
