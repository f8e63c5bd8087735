"""A target × arch's steps across its last builds: per step, each build's run time and
whether it came from the cache. What the history screen's step panel draws (`S`): the step
that got slower, or stopped being cached, shows in one row without opening a log.

Steps match across builds as `history diff` matches them (`stepdiff.step_key`: the
Dockerfile position and instruction, as BuildKit expands build args in a step's name). Rows
come slowest first (by their longest run in the builds shown), the newest build's critical
path marked; a build whose steps cannot be had keeps its column with the reason, so a gap
reads as a gap and never as a step that vanished.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from msgspec import Struct
from msgspec.structs import replace

from rocmtui.core.config.fleetfile import FleetConfig
from rocmtui.core.history.stepdiff import step_key
from rocmtui.core.history.stepreport import StepReport
from rocmtui.core.jobs.store import JobStore, JobStoreError
from rocmtui.core.text.sanitize import one_line

#: Builds shown side by side (newest first): enough to see a trend, few enough for 80 columns.
TREND_BUILDS = 6
#: Rows kept: a 10,000-step build's trend is its slowest steps, and the count of the rest.
TREND_ROWS = 200
#: A build's steps not kept yet are read from BuildKit's history for at most this long.
READ_TIMEOUT = 30.0


class TrendBuild(Struct, frozen=True):
    """One build, a column."""

    job_id: str
    node: str
    started_at: float
    outcome: str
    span: float | None = None  # its steps' span (None: no steps)
    note: str | None = None  # why its steps are missing (one line)


class TrendCell(Struct, frozen=True):
    """One step in one build (`present` False: not in that build, or its steps are missing)."""

    present: bool
    run: float | None = None  # None: unknown (skewed clock) or never started
    cached: bool = False


class TrendRow(Struct, frozen=True):
    """One step across the builds, newest build first."""

    key: str
    name: str  # sanitised: the newest build's name for it
    cells: tuple[TrendCell, ...]
    critical: bool  # on the newest build's critical path

    @property
    def slowest(self) -> float:
        """Its longest run among the builds shown."""
        return max((c.run for c in self.cells if c.run is not None), default=0.0)

    @property
    def missed(self) -> bool:
        """Ran in the newest build that has it, after the cache held it in the one before."""
        if self.key.partition("] ")[2].upper().startswith("FROM"):
            return False  # BuildKit reads a local image's FROM cached or done by whim
        seen = [c for c in self.cells if c.present]
        return len(seen) >= 2 and not seen[0].cached and seen[1].cached


class StepTrend(Struct, frozen=True):
    """A target × arch's last builds (newest first) and their steps side by side."""

    target: str
    arch: str
    builds: tuple[TrendBuild, ...]
    rows: tuple[TrendRow, ...]
    more: int = 0  # rows past TREND_ROWS, not kept

    @classmethod
    def build(
        cls,
        target: str,
        arch: str,
        builds: Sequence[tuple[TrendBuild, StepReport | None]],
        limit: int = TREND_ROWS,
    ) -> StepTrend:
        """Set `builds` (newest first, each with its steps or None) side by side."""
        keyed: list[dict[str, tuple[str, float | None, bool]]] = []
        for _, report in builds:
            mine: dict[str, tuple[str, float | None, bool]] = {}
            for s in report.steps if report is not None else ():
                key, n = step_key(s.name), 1
                while key in mine:  # a name seen twice matches in order
                    n += 1
                    key = f"{step_key(s.name)} #{n}"
                mine[key] = (s.name, s.run, s.cached)
            keyed.append(mine)
        newest = next((r for _, r in builds if r is not None), None)
        critical = {step_key(s.name) for s in newest.critical_steps} if newest else set()
        order: dict[str, str] = {}
        for mine in keyed:
            for key, (name, _, _) in mine.items():
                order.setdefault(key, name)
        rows = [
            TrendRow(
                key,
                name,
                tuple(
                    TrendCell(True, mine[key][1], mine[key][2]) if key in mine else TrendCell(False)
                    for mine in keyed
                ),
                key in critical,
            )
            for key, name in order.items()
        ]
        rows.sort(key=lambda r: (-r.slowest, r.key))
        return cls(target, arch, tuple(b for b, _ in builds), tuple(rows[:limit]),
                   max(len(rows) - limit, 0))  # fmt: skip


def load_trend(
    config: FleetConfig,
    store: JobStore,
    target: str,
    arch: str,
    count: int = TREND_BUILDS,
    env: Mapping[str, str] | None = None,
    timeout: float = READ_TIMEOUT,
) -> StepTrend:
    """The last `count` ended builds of `target` × `arch` on any node, from the cost book,
    each with its steps (kept, else read from BuildKit's history under `timeout`; a build
    whose steps cannot be had says why in its column). Blocking: run it in a worker."""
    # on first use, in a worker: the cost book and step store bring the job store
    from rocmtui.core.costbook.book import CostBook, CostFilter
    from rocmtui.core.history.stepstore import StepsUnavailable, steps_of
    from rocmtui.core.jobs.control import get_job

    clock = time.time()
    book = CostBook(store, config.history_retention_days)
    rows = [r for r in book.rows(CostFilter(target=target, arch=arch)) if r.ended_at is not None]
    rows.sort(key=lambda r: (r.started_at, r.job_id), reverse=True)
    out: list[tuple[TrendBuild, StepReport | None]] = []
    for row in rows[:count]:
        column = TrendBuild(row.job_id, row.node, row.started_at, row.outcome)
        try:
            kept = steps_of(config, store, get_job(row.job_id, config, store), env, timeout)
        except (StepsUnavailable, LookupError, JobStoreError, OSError) as exc:
            out.append((replace(column, note=one_line(exc)), None))
            continue
        report = StepReport.build(kept.steps, clock, False, kept.dropped)
        out.append((replace(column, span=report.span), report))
    return StepTrend.build(target, arch, out)


__all__ = [
    "READ_TIMEOUT",
    "TREND_BUILDS",
    "TREND_ROWS",
    "StepTrend",
    "TrendBuild",
    "TrendCell",
    "TrendRow",
    "load_trend",
]
