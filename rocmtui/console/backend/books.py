"""The job store's books as the history, runs and timeline screens read them: the door's
blocking reads for those screens (each screen calls one in a thread worker of its own).

A screen holds the fleet file and asks here for a whole report; it never opens the job store,
reads a build's steps from its engine or compares builds itself. Whatever stops a read (the
store locked or unreadable, an engine that no longer has the build, no such job) comes back as
one `Unreadable`, whose text the screen shows as its one-line reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rocmtui.core.config.fleetfile import FleetConfig

if TYPE_CHECKING:  # the books are read when a screen is first shown, never at start-up
    from rocmtui.core.costbook.report import HistoryReport
    from rocmtui.core.history.stepdiff import BuildDiff
    from rocmtui.core.history.stepreport import StepReport
    from rocmtui.core.history.steptrend import StepTrend
    from rocmtui.core.runs.run import Run


class Unreadable(Exception):
    """A book could not be read; the text says why, in one line."""


def cost_report(config: FleetConfig, now: float) -> HistoryReport:
    """What builds cost, per target × arch × node, from the job store's history."""
    # on first use, in the screen's worker thread: not on the event loop as it opens
    from rocmtui.core.costbook.book import load_history
    from rocmtui.core.costbook.report import HistoryReport
    from rocmtui.core.jobs.store import JobStore, JobStoreError

    try:
        rows, running = load_history(
            JobStore.for_config(config),
            config.history_retention_days,
            stall_after=config.stall_after_seconds,
            now=now,
        )
    except (JobStoreError, OSError) as exc:
        raise Unreadable(str(exc)) from exc
    return HistoryReport.build(rows, running, now)


def fleet_runs(config: FleetConfig, now: float, costs: bool) -> list[Run]:
    """The fleet runs, the run book brought up to date first (`costs`: their costs too)."""
    # on first use, in the screen's worker thread: not on the event loop as it opens
    from rocmtui.core.jobs.store import JobStore, JobStoreError
    from rocmtui.core.runs.book import RunBook

    try:
        book = RunBook(JobStore.for_config(config), config.stall_after_seconds)
        book.bring_up_to_date(config.history_retention_days, now, costs)
        return list(book.runs(None, now))
    except (JobStoreError, OSError) as exc:
        raise Unreadable(str(exc)) from exc


def step_report(config: FleetConfig, job_id: str, now: float, live_peek: float) -> StepReport:
    """One build's steps on a time axis, from its engine's history (`live_peek`: how long a
    running build's engine is given to answer)."""
    # on first use, in the screen's worker thread: not on the event loop as it opens
    from rocmtui.core.history.stepreport import StepReport
    from rocmtui.core.history.stepstore import StepsUnavailable, steps_of
    from rocmtui.core.jobs.control import get_job
    from rocmtui.core.jobs.store import JobStore, JobStoreError

    try:
        store = JobStore.for_config(config)
        record = get_job(job_id, config, store)
        running = record.ended_at is None
        kept = steps_of(config, store, record, timeout=live_peek if running else 60.0)
    except (StepsUnavailable, JobStoreError, LookupError, OSError) as exc:
        raise Unreadable(str(exc)) from exc
    return StepReport.build(kept.steps, now, running, kept.dropped)


def baseline_diff(config: FleetConfig, job_id: str) -> BuildDiff:
    """The build against its baseline (the last one of its target × arch × node)."""
    # on first use, in the screen's worker thread: not on the event loop as it opens
    from rocmtui.core.history.baseline import diff_jobs
    from rocmtui.core.history.stepstore import StepsUnavailable
    from rocmtui.core.jobs.store import JobStore, JobStoreError

    try:
        return diff_jobs(config, JobStore.for_config(config), job_id)
    except (StepsUnavailable, JobStoreError, LookupError, OSError) as exc:
        raise Unreadable(str(exc)) from exc


def step_trend(config: FleetConfig, target: str, arch: str) -> StepTrend:
    """How each step of `target` × `arch` took over its recent builds."""
    # on first use, in the screen's worker thread: not on the event loop as it opens
    from rocmtui.core.history.steptrend import load_trend
    from rocmtui.core.jobs.store import JobStore, JobStoreError

    try:
        return load_trend(config, JobStore.for_config(config), target, arch)
    except (JobStoreError, OSError) as exc:
        raise Unreadable(str(exc)) from exc
