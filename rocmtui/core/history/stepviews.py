"""A build's steps and a comparison of two builds as JSON: what `rocmtui history show --json`
prints under `steps` and `critical_path`, and what `rocmtui history diff --json` prints.

View Structs in printed order, times rounded to the millisecond, computed fields (the
critical path's step names, a step's `missed`, the verdict) filled by their `of`; msgspec
encodes them (no dict built by hand).
"""

from __future__ import annotations

from typing import Any

from msgspec import Struct, json

from rocmtui.core.history.stepdiff import BuildDiff, Reason, StepChange
from rocmtui.core.history.stepreport import StepReport, StepTime


def _ms(seconds: float | None) -> float | None:
    """Seconds rounded to the millisecond (None stays None)."""
    return None if seconds is None else round(seconds, 3)


class StepTimeView(Struct, frozen=True, kw_only=True):
    """One step on the build's axis, as printed."""

    digest: str
    name: str
    start: float | None
    wait: float
    run: float | None
    cached: bool
    error: str | None
    critical: bool
    open: bool
    skewed: bool

    @classmethod
    def of(cls, step: StepTime) -> StepTimeView:
        """The printed form of `step`."""
        return cls(
            digest=step.digest,
            name=step.name,
            start=_ms(step.start),
            wait=round(step.wait, 3),
            run=_ms(step.run),
            cached=step.cached,
            error=step.error,
            critical=step.critical,
            open=step.open,
            skewed=step.skewed,
        )


class CriticalPathView(Struct, frozen=True, kw_only=True):
    """The critical path as printed: its digests and their steps' names."""

    digests: tuple[str, ...]
    names: tuple[str, ...]
    run: float
    note: str | None


class StepReportView(Struct, frozen=True, kw_only=True):
    """A build's steps as printed."""

    started_at: float | None
    span: float
    running: bool
    dropped_steps: int
    steps: tuple[StepTimeView, ...]
    critical_path: CriticalPathView

    @classmethod
    def of(cls, report: StepReport) -> StepReportView:
        """The printed form of `report`."""
        path = CriticalPathView(
            digests=report.path.digests,
            names=tuple(s.name for s in report.critical_steps),
            run=round(report.path.run, 3),
            note=report.path.note,
        )
        return cls(
            started_at=report.started_at,
            span=round(report.span, 3),
            running=report.running,
            dropped_steps=report.dropped,
            steps=tuple(StepTimeView.of(s) for s in report.steps),
            critical_path=path,
        )


class StepChangeView(Struct, frozen=True, kw_only=True):
    """One step then and now, as printed."""

    key: str
    name: str
    then_run: float | None
    then_cached: bool | None
    now_run: float | None
    now_cached: bool | None
    missed: bool

    @classmethod
    def of(cls, change: StepChange) -> StepChangeView:
        """The printed form of `change`."""
        return cls(
            key=change.key,
            name=change.name,
            then_run=_ms(change.then_run),
            then_cached=change.then_cached,
            now_run=_ms(change.now_run),
            now_cached=change.now_cached,
            missed=change.missed,
        )


class BuildDiffView(Struct, frozen=True, kw_only=True):
    """Two builds compared, as printed."""

    now: str
    then: str
    now_span: float
    then_span: float
    first_miss: str | None
    reasons: tuple[Reason, ...]
    compared: tuple[str, ...]
    verdict: str
    steps: tuple[StepChangeView, ...]

    @classmethod
    def of(cls, diff: BuildDiff) -> BuildDiffView:
        """The printed form of `diff`."""
        return cls(
            now=diff.now_job,
            then=diff.then_job,
            now_span=round(diff.now_span, 3),
            then_span=round(diff.then_span, 3),
            first_miss=None if diff.first_miss is None else diff.first_miss.name,
            reasons=diff.reasons,
            compared=diff.compared,
            verdict=diff.verdict,
            steps=tuple(StepChangeView.of(s) for s in diff.steps),
        )


def steps_json(report: StepReport) -> dict[str, Any]:
    """`report` as a JSON-ready dict (plain dicts and lists)."""
    data: dict[str, Any] = json.decode(json.encode(StepReportView.of(report)))
    return data


def diff_json(diff: BuildDiff) -> dict[str, Any]:
    """`diff` as a JSON-ready dict (plain dicts and lists)."""
    data: dict[str, Any] = json.decode(json.encode(BuildDiffView.of(diff)))
    return data


__all__ = ["BuildDiffView", "StepReportView", "diff_json", "steps_json"]
