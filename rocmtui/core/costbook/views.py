"""`rocmtui history --json` as Structs: msgspec encodes them in field order (kw_only lets them
stand as printed), so the README's stable shape is written down once, as types.

The records (`CostRow`, `GroupReport`'s statistics, regressions, estimate) stay as the
statistics need them; each view's `of` adds what is computed for the reader (a row's condition
and evidence line, rounded figures, the `text` of a regression or estimate). Nothing reads this
JSON back, so there is no way in.
"""

from __future__ import annotations

from typing import Any

from msgspec import Struct, json

from rocmtui.core.costbook.book import CostRow
from rocmtui.core.costbook.cost import Condition, ConditionStats, Estimate, Regression


def plain(view: Struct) -> dict[str, Any]:
    """A view as plain dicts and lists (what a script comparing with `json.loads` gets)."""
    data: dict[str, Any] = json.decode(json.encode(view))
    return data


class BuildView(Struct, frozen=True, kw_only=True):
    """One build, as listed under `builds`."""

    job_id: str
    target: str
    arch: str
    node: str
    started_at: float
    ended_at: float | None
    duration: float
    outcome: str
    origin: str
    started_by: str
    condition: Condition
    evidence: str
    steps_total: int | None
    steps_cached: int | None
    steps_from: str | None
    sccache_hits: int | None
    sccache_misses: int | None
    sccache_hit_rate: float | None
    settling: bool  # ended moments ago: its late evidence (sccache) may still come
    note: str | None

    @classmethod
    def of(cls, row: CostRow, note: str | None = None) -> BuildView:
        """The printed form of `row` (`note`: a running build's estimate and overtime)."""
        e = row.evidence
        rate = e.hit_rate
        return cls(
            job_id=row.job_id,
            target=row.target,
            arch=row.arch,
            node=row.node,
            started_at=row.started_at,
            ended_at=row.ended_at,
            duration=round(row.duration, 3),
            outcome=row.outcome,
            origin=row.origin,
            started_by=row.started_by,
            condition=row.condition,
            evidence=row.describe(),
            steps_total=e.steps_total,
            steps_cached=e.steps_cached,
            steps_from=e.steps_from,
            sccache_hits=e.sccache_hits,
            sccache_misses=e.sccache_misses,
            sccache_hit_rate=None if rate is None else round(rate, 4),
            settling=row.settling,
            note=note,
        )


class StatsView(Struct, frozen=True, kw_only=True):
    """A condition's durations, seconds rounded to 0.1."""

    count: int
    median: float
    p90: float
    last: float

    @classmethod
    def of(cls, stats: ConditionStats) -> StatsView:
        """The printed form of `stats`."""
        return cls(
            count=stats.count,
            median=round(stats.median, 1),
            p90=round(stats.p90, 1),
            last=round(stats.last, 1),
        )


class RegressionView(Struct, frozen=True, kw_only=True):
    """A regression with its sentence."""

    kind: str
    condition: Condition
    last: float
    median: float
    started_at: float
    text: str

    @classmethod
    def of(cls, r: Regression) -> RegressionView:
        """The printed form of `r`."""
        return cls(
            kind=r.kind,
            condition=r.condition,
            last=round(r.last, 3),
            median=round(r.median, 3),
            started_at=r.started_at,
            text=r.describe(),
        )


class EstimateView(Struct, frozen=True, kw_only=True):
    """What the next build is expected to take, with its sentence."""

    seconds: float
    condition: Condition
    p90: float
    assumed: bool
    text: str

    @classmethod
    def of(cls, e: Estimate | None) -> EstimateView | None:
        """The printed form of `e` (None stays None)."""
        if e is None:
            return None
        return cls(
            seconds=round(e.seconds, 1),
            condition=e.condition,
            p90=round(e.p90, 1),
            assumed=e.assumed,
            text=e.describe(),
        )


class GroupView(Struct, frozen=True, kw_only=True):
    """One target × arch × node, as listed under `groups`."""

    target: str
    arch: str
    node: str
    builds: int
    conditions: dict[Condition, StatsView]  # in `CONDITIONS` order
    regressions: tuple[RegressionView, ...]
    estimate: EstimateView | None


class ReportView(Struct, frozen=True, kw_only=True):
    """`rocmtui history --json`."""

    version: int
    generated_at: float
    thresholds: dict[str, float | int]
    builds: tuple[BuildView, ...]
    groups: tuple[GroupView, ...]
