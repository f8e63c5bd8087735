"""The cost book read as a report: builds, and per target × arch × node their statistics per
condition, regressions and what the next build is expected to take.

`HistoryReport.build(rows)` is what `rocmtui history` prints and the console's history screen
draws. `to_json()` is the stable shape documented in the README (fields are only added),
encoded by msgspec from the view Structs of `rocmtui.core.costbook.views`.
"""

from __future__ import annotations

import csv
import io
import time
from collections.abc import Iterable, Sequence
from typing import Any

from msgspec import Struct

from rocmtui.core.costbook.book import CostRow
from rocmtui.core.costbook.cost import (
    CONDITIONS,
    Condition,
    ConditionStats,
    CostPoint,
    Estimate,
    Regression,
    condition_stats,
    estimate,
    overtime_note,
    regressions,
    thresholds,
)
from rocmtui.core.costbook.views import (
    BuildView,
    EstimateView,
    GroupView,
    RegressionView,
    ReportView,
    StatsView,
    plain,
)
from rocmtui.core.text.units import fmt_utc_stamp

JSON_VERSION = 1
CSV_FIELDS = (
    "job_id",
    "target",
    "arch",
    "node",
    "started_at",
    "duration",
    "outcome",
    "origin",
    "started_by",
    "condition",
    "steps_cached",
    "steps_total",
    "sccache_hit_rate",
    "evidence",
)


class GroupReport(Struct, frozen=True):
    """One target × arch × node."""

    target: str
    arch: str
    node: str
    builds: int
    stats: dict[Condition, ConditionStats]
    regressions: tuple[Regression, ...]
    estimate: Estimate | None
    last: CostRow | None  # the newest finished build

    @property
    def key(self) -> tuple[str, str, str]:
        """(target, arch, node)."""
        return (self.target, self.arch, self.node)

    def to_json(self) -> dict[str, Any]:
        """The group as `rocmtui history --json` lists it under `groups`."""
        return plain(self.view())

    def view(self) -> GroupView:
        """The group as printed (`rocmtui.core.costbook.views`)."""
        return GroupView(
            target=self.target,
            arch=self.arch,
            node=self.node,
            builds=self.builds,
            conditions={c: StatsView.of(s) for c, s in _ordered(self.stats)},
            regressions=tuple(RegressionView.of(r) for r in self.regressions),
            estimate=EstimateView.of(self.estimate),
        )


def _ordered(stats: dict[Condition, ConditionStats]) -> list[tuple[Condition, ConditionStats]]:
    return [(c, stats[c]) for c in CONDITIONS if c in stats]


def build_json(row: CostRow, now: float | None = None, note: str | None = None) -> dict[str, Any]:
    """One build as `rocmtui history --json` lists it under `builds`."""
    return plain(BuildView.of(row, note))


class HistoryReport(Struct, frozen=True):
    """Builds oldest first (finished ones, then running), and their groups."""

    builds: tuple[CostRow, ...]
    running: tuple[CostRow, ...]
    groups: tuple[GroupReport, ...]
    generated_at: float
    # each group's builds as the statistics see them, oldest first (a cursor move on the
    # history screen draws one group: no walk over every build)
    by_group: dict[tuple[str, str, str], list[CostPoint]] = {}

    @classmethod
    def build(
        cls,
        rows: Iterable[CostRow],
        running: Sequence[CostRow] = (),
        now: float | None = None,
    ) -> HistoryReport:
        """Group `rows` (finished builds) by target × arch × node."""
        now = time.time() if now is None else now
        finished = tuple(rows)
        points: dict[tuple[str, str, str], list[CostPoint]] = {}
        last: dict[tuple[str, str, str], CostRow] = {}
        count: dict[tuple[str, str, str], int] = {}
        for row in finished:
            points.setdefault(row.group, []).append(row.point())
            last[row.group] = row
            count[row.group] = count.get(row.group, 0) + 1
        groups = tuple(
            GroupReport(
                target=key[0],
                arch=key[1],
                node=key[2],
                builds=count[key],
                stats=condition_stats(pts),
                regressions=tuple(regressions(pts)),
                estimate=estimate(pts),
                last=last[key],
            )
            for key, pts in sorted(points.items())
        )
        return cls(finished, tuple(running), groups, now, points)

    def group(self, key: tuple[str, str, str]) -> GroupReport | None:
        """The group of (target, arch, node), if it has finished builds."""
        return next((g for g in self.groups if g.key == key), None)

    def points(self, key: tuple[str, str, str]) -> list[CostPoint]:
        """A group's builds as the statistics see them, oldest first."""
        return list(self.by_group.get(key, ()))

    def running_note(self, row: CostRow) -> str | None:
        """For a running build: `≈ 2h10m, warm as last time` and, past its usual time, the
        overtime flag."""
        group = self.group(row.group)
        if group is None:
            return None
        parts = [group.estimate.describe()] if group.estimate else []
        late = overtime_note(row.duration, self.points(row.group))
        if late:
            parts.append(late)
        return "; ".join(parts) or None

    def to_json(self) -> dict[str, Any]:
        """The stable shape of `rocmtui history --json` (see the README)."""
        view = ReportView(
            version=JSON_VERSION,
            generated_at=self.generated_at,
            thresholds=thresholds(),
            builds=tuple(BuildView.of(r) for r in self.builds)
            + tuple(BuildView.of(r, note=self.running_note(r)) for r in self.running),
            groups=tuple(g.view() for g in self.groups),
        )
        return plain(view)

    def to_csv(self) -> str:
        """One line per build (`CSV_FIELDS`), for spreadsheets; times as UTC ISO stamps."""
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(CSV_FIELDS)
        for row in (*self.builds, *self.running):
            data = build_json(row)
            data["started_at"] = fmt_utc_stamp(row.started_at)
            data["duration"] = round(row.duration, 1)
            writer.writerow(["" if data[f] is None else data[f] for f in CSV_FIELDS])
        return out.getvalue()
