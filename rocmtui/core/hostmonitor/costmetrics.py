"""The build-duration histogram the monitor exports: `rocmtui_build_duration_seconds` by target,
arch and cache condition, over the succeeded builds the job store's cost book holds.

Labels stay bounded: targets and arches come from the bake file, the condition is one of five
words; never a node name (the fleet file bounds those too, but target × arch × condition ×
node made the series count grow with every node added for little gain: the history screen
and `rocmtui history` have the nodes). The buckets run from a minute to sixteen hours (a
frozen build to a cold PyTorch one).

The book is brought up to date at most every `SYNC_SECONDS` (each round would re-ask SQLite
for nothing) and its rows re-read only when it changed; the histogram covers the retention
period, so a count can fall when old builds leave it (Prometheus reads that as a reset).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence

from msgspec import Struct
from prometheus_client.core import HistogramMetricFamily

from rocmtui.core.costbook.book import CostBook, CostRow
from rocmtui.core.jobs.store import JobStore

BUCKETS = (60.0, 300.0, 900.0, 1800.0, 3600.0, 7200.0, 14400.0, 28800.0, 57600.0)
SYNC_SECONDS = 60.0
NAME = "rocmtui_build_duration_seconds"


class DurationHistogram(Struct, frozen=True):
    """One series: cumulative counts per bucket (the last is +Inf), the sum of seconds."""

    target: str
    arch: str
    condition: str
    counts: tuple[int, ...]
    total: float

    @property
    def count(self) -> int:
        """How many builds."""
        return self.counts[-1]


def histograms(rows: Iterable[CostRow]) -> tuple[DurationHistogram, ...]:
    """The succeeded rows' durations per target, arch and condition."""
    found: dict[tuple[str, str, str], list[float]] = {}
    for row in rows:
        if row.outcome == "succeeded":
            key = (row.target, row.arch or "none", str(row.condition))
            found.setdefault(key, []).append(row.duration)
    out = []
    for (target, arch, condition), durations in sorted(found.items()):
        counts = tuple(sum(1 for d in durations if d <= le) for le in BUCKETS)
        out.append(
            DurationHistogram(target, arch, condition, (*counts, len(durations)), sum(durations))
        )
    return tuple(out)


def duration_family(series: Sequence[DurationHistogram]) -> HistogramMetricFamily:
    """The histogram family for the exposition."""
    family = HistogramMetricFamily(
        NAME,
        "How long succeeded builds took, by target, arch and cache condition (frozen, hot, "
        "warm, cold, unknown), over the job store's build history retention",
        labels=["target", "arch", "condition"],
    )
    for s in series:
        buckets = [(f"{le:g}", float(n)) for le, n in zip(BUCKETS, s.counts, strict=False)]
        buckets.append(("+Inf", float(s.count)))
        family.add_metric([s.target, s.arch, s.condition], buckets, s.total)
    return family


class CostCounts:
    """The histogram's series, kept between rounds (see the module doc). Blocking."""

    def __init__(self, store: JobStore, retention_days: float) -> None:
        self.book = CostBook(store, retention_days)
        self._synced_at: float | None = None
        self._seen: tuple[object, ...] | None = None
        self._series: tuple[DurationHistogram, ...] = ()

    def series(self, now: float | None = None) -> tuple[DurationHistogram, ...]:
        """The series now (the store's errors propagate: the caller says them)."""
        now = time.time() if now is None else now
        if self._synced_at is None or now - self._synced_at >= SYNC_SECONDS:
            self.book.sync(now)
            self._synced_at = now
        with self.book.store.connect() as conn:
            seen = tuple(
                conn.execute(
                    "SELECT COUNT(*), MAX(rowid), MIN(started_at) FROM build_costs"
                ).fetchone()
            )
        if seen != self._seen:
            self._series = histograms(self.book.rows())
            self._seen = seen
        return self._series
