"""A build and the build before it: the baseline a diff compares with, and the diff itself.

The baseline by default is the last successful build of the same target × arch that started
before it, on the same node when there is one (any node else), from the cost book; any other
build by id. Both builds' steps come from `stepstore.steps_of` (kept, else BuildKit's
history), their facts from `buildfacts.facts_of` with sccache's hit rate from the cost book.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from rocmtui.core.config.fleetfile import FleetConfig
from rocmtui.core.costbook.book import CostBook, CostFilter, CostRow
from rocmtui.core.history.buildfacts import facts_of
from rocmtui.core.history.stepdiff import BuildDiff, diff_builds
from rocmtui.core.history.stepreport import StepReport
from rocmtui.core.history.stepstore import steps_of
from rocmtui.core.jobs.control import get_job
from rocmtui.core.jobs.record import JobRecord
from rocmtui.core.jobs.store import JobStore
from rocmtui.core.states import JobState


class NoBaseline(LookupError):
    """No build to compare with: one line saying what was looked for."""


def pick_baseline(rows: list[CostRow], build: JobRecord) -> str:
    """The job id of `build`'s default baseline among the cost book's `rows`."""
    earlier = [
        r
        for r in rows
        if r.job_id != build.id
        and r.target == build.target
        and r.arch == build.arch
        and r.outcome == JobState.SUCCEEDED.value
        and r.started_at < build.started_at
    ]
    same_node = [r for r in earlier if r.node == build.node]
    pool = same_node or earlier
    if not pool:
        raise NoBaseline(
            f"no earlier successful build of {build.target} {build.arch or '-'} to compare "
            f"job {build.id} with (give one: history diff {build.id} OTHER)"
        )
    return max(pool, key=lambda r: r.started_at).job_id


def diff_jobs(
    config: FleetConfig,
    store: JobStore,
    now_ref: str,
    then_ref: str | None = None,
    env: Mapping[str, str] | None = None,
) -> BuildDiff:
    """`now_ref` against `then_ref` (default: its baseline). Raises LookupError (an unknown
    job, no baseline) or `stepstore.StepsUnavailable`."""
    clock = time.time()
    book = CostBook(store, config.history_retention_days)
    book.sync(clock)
    now_job = get_job(now_ref, config, store)
    rows = book.rows(CostFilter(target=now_job.target))
    then_id = then_ref if then_ref is not None else pick_baseline(rows, now_job)
    then_job = get_job(then_id, config, store)
    rate = {r.job_id: r.evidence.hit_rate for r in rows}
    reports = []
    for job in (now_job, then_job):
        kept = steps_of(config, store, job, env)
        reports.append(StepReport.build(kept.steps, clock, job.ended_at is None, kept.dropped))
    return diff_builds(
        reports[0],
        reports[1],
        facts_of(now_job, rate.get(now_job.id)),
        facts_of(then_job, rate.get(then_job.id)),
        now_job.id,
        then_job.id,
    )


__all__ = ["NoBaseline", "diff_jobs", "pick_baseline"]
