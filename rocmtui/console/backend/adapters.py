"""Adapters from the core's records to the console's frozen views (blocking; called by workers).

This is where the console meets the core's exact names. What the console shows is what it
starts: the variables panel resolves values under the environment a launch from this console
uses (a scrubbed environment plus the operator's variables named like bake variables, passed as
explicit overrides), and the bake dialog prints and launches with exactly that environment.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from msgspec.structs import replace

from rocmtui.console.backend.views import (
    BakePlan,
    BakeView,
    JobView,
    ProgressView,
    StepView,
    VariableView,
)
from rocmtui.core.config.fleetfile import FleetConfig
from rocmtui.core.states import JobState

if TYPE_CHECKING:  # imported when first used, not at start-up (the console's first frame
    # needs none of them: the bake file and the progress parser are read by the workers)
    from rocmtui.console.backend.jobextras import JobExtras
    from rocmtui.core.bake.file import BakeFile
    from rocmtui.core.costbook.estimate import CostEstimates
    from rocmtui.core.jobs.record import JobRecord
    from rocmtui.core.progress.tracker import JobProgress, ProgressTracker, Step
    from rocmtui.core.verdicts.context import StallJudge

MAX_PROGRESS_READ = 4 << 20  # bytes of new log read per job per round; the rest next round
PRINT_TIMEOUT = 20.0


def env_overrides(
    bake: BakeFile, env: Mapping[str, str], fleet: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The operator's variables named like bake variables, over the fleet file's `[variables]`
    (GFX_ARCH is chosen per build)."""
    from rocmtui.core.bake.effective import fleet_variables, shell_overrides
    from rocmtui.core.bake.file import ARCH_VARIABLE

    found = fleet_variables(fleet or {}, bake) | shell_overrides(bake, env)
    found.pop(ARCH_VARIABLE, None)
    return found


# ---------------------------------------------------------------------------- bake file


def bake_view(config: FleetConfig, bake: BakeFile, env: Mapping[str, str]) -> BakeView:
    """Targets, arches and every variable's effective value, resolved by bake itself."""
    from rocmtui.core.bake import effective
    from rocmtui.core.bake import resolve as bakeprint
    from rocmtui.core.bake.file import ARCH_VARIABLE

    overrides = env_overrides(bake, env, config.variables)
    launch_env = bakeprint.bake_environment(env, overrides, bake_variables=bake.variables)
    from_fleet = effective.fleet_variables(config.variables, bake).keys() - env.keys()
    error = None
    try:
        resolved = bakeprint.resolved_variables(
            bake.path, bake.variables, launch_env, timeout=PRINT_TIMEOUT
        )
    except Exception as exc:  # buildx missing or slow: static values, and say so
        resolved = None
        error = f"values not resolved by bake ({type(exc).__name__}: {exc}); showing defaults"
    variables = effective.effective_variables(bake, launch_env, resolved, from_fleet)
    views = tuple(
        VariableView(
            name=v.name,
            value=v.value if v.value is not None else (v.default_source or "?"),
            default=v.default if v.default is not None else v.default_source,
            source={effective.SOURCE_ENVIRONMENT: "env", effective.SOURCE_FLEET: "fleet"}.get(
                v.source, "default"
            ),
            secret=v.secret,
        )
        for v in variables
    )
    from rocmtui.core.jobs.checks import default_arch

    return BakeView(
        path=bake.path,
        targets=buildable_names(bake, launch_env),
        pushing_targets=bake.pushing_targets,
        arches=bake.arches,
        variables=views,
        error=error,
        default_arch=default_arch(bake),
        declares_arch=ARCH_VARIABLE in bake.variables,
    )


def buildable_names(bake: BakeFile, launch_env: Mapping[str, str]) -> tuple[str, ...]:
    """Every name `rocmtui bake` takes, as the dialog offers them: the file's targets in its
    order, then groups (a matrix block's label is one), then the names its matrices make
    (`pytorch-gfx1201`), as bake resolves them; names starting with `_` are bases, not builds.
    Without buildx, the names written in the file."""
    from rocmtui.core.bake import resolve as bakeprint

    plain = [n for n, t in bake.targets.items() if not t.matrix]
    groups = sorted({*bake.groups, *(n for n, t in bake.targets.items() if t.matrix)})
    try:
        made = bakeprint.resolved_names(bake, launch_env, timeout=PRINT_TIMEOUT)
    except Exception:  # buildx missing or slow: what the file says is still right
        made = frozenset()
    generated = sorted(made - set(plain) - set(groups))
    names = dict.fromkeys(n for n in (*plain, *groups, *generated) if not n.startswith("_"))
    return tuple(names)


# ---------------------------------------------------------------------------- jobs


class ProgressCache:
    """Per-job progress trackers, fed incrementally with each log's new lines.

    The tracker keeps counters, not lines, and each round reads only what was appended (at
    most MAX_PROGRESS_READ bytes), so following a long build costs little and memory is flat.
    """

    def __init__(self) -> None:
        self._trackers: dict[str, tuple[ProgressTracker | None, int]] = {}

    def progress(
        self,
        job_id: str,
        target: str,
        log_path: Path | None,
        now: float,
        succeeded: bool | None = None,
    ) -> ProgressView | None:
        """Feed the job's new log lines to its tracker and return the current progress
        (`succeeded`: how the build ended, None while it runs; an ended build runs no step)."""
        from rocmtui.core.progress.tracker import ProgressTracker

        if log_path is None:
            return None
        tracker, offset = self._trackers.get(job_id, (None, 0))
        try:
            info = os.stat(log_path)
        except OSError:
            return None
        if tracker is None or info.st_size < offset:  # new, or truncated/replaced: start over
            tracker, offset = ProgressTracker(targets=(target,)), 0
        if info.st_size > offset:
            try:
                with open(log_path, "rb") as fh:
                    fh.seek(offset)
                    chunk = fh.read(MAX_PROGRESS_READ)
            except OSError:
                chunk = b""
            cut = chunk.rfind(b"\n") + 1  # whole lines only; split on \n alone (a bare \r
            if cut:  # may sit inside a BuildKit line)
                tracker.feed(chunk[:cut].decode("utf-8", "replace").split("\n")[:-1], now)
                offset += cut
        self._trackers[job_id] = (tracker, offset)
        # the silence is the log's age, as the core's stall check reads it: every panel and
        # every console shows the same silence, rate and ETA for one log
        silence = max(0.0, now - info.st_mtime)
        snapshot = tracker.snapshot(now, silence=silence, succeeded=succeeded)
        return progress_view(snapshot, info.st_mtime)

    def forget_except(self, keep: Iterable[str]) -> None:
        """Drop trackers of jobs no longer followed (memory stays bounded)."""
        wanted = set(keep)
        for job_id in list(self._trackers):
            if job_id not in wanted:
                del self._trackers[job_id]


def _step_label(step: Step) -> str:
    return f"#{step.number} {step.title or step.name}"


def progress_view(progress: JobProgress, log_mtime: float | None = None) -> ProgressView:
    """The core's JobProgress as a ProgressView. The last output is the log's mtime (what the
    stall check reads), not when this console happened to read the lines."""
    steps = tuple(
        StepView(
            number=f"#{s.number}",
            name=str(s.title or s.name),
            status=str(s.status),
            duration=s.duration
            if s.duration is not None
            else (s.ended - s.started if s.ended is not None and s.started is not None else None),
            first_line=s.first_line,
        )
        for s in progress.steps
        if not s.internal or s.status == "error"
    )
    ninja = progress.ninja
    last = log_mtime if log_mtime is not None else progress.last_output
    return ProgressView(
        step=_step_label(progress.current) if progress.current is not None else None,
        steps_done=int(progress.steps_done),
        steps_total=int(progress.steps_total),
        cached=int(progress.steps_cached),
        ninja_done=ninja.done if ninja else None,
        ninja_total=ninja.total if ninja else None,
        rate=ninja.rate if ninja else None,
        eta=ninja.eta_seconds if ninja else None,
        last_output_at=last,
        error_step=_step_label(progress.error_step) if progress.error_step is not None else None,
        steps=steps,
    )


def job_view(
    record: JobRecord, progress: ProgressView | None, bake: BakeFile | None = None
) -> JobView:
    """The core's JobRecord as a JobView. A build started elsewhere carries in its record
    what `r` relaunches for it (the core's `rebuild_request`: its build args that differ from
    the bake file's defaults; none until the bake file is read)."""
    if record.outside is not None:
        from rocmtui.core.history.rebuild import rebuild_request

        again = rebuild_request(record, bake)
        record = replace(
            record,
            # not inspected yet: its record id is no target
            target=again.target if record.outside.target else "?",
            arch=again.arch or "",
            push=again.push,
            overrides=dict(again.overrides) if bake is not None else {},
        )
    return JobView(record=record, progress=progress)


def list_jobs(
    config: FleetConfig,
    cache: ProgressCache,
    now: float,
    watched: frozenset[str] = frozenset(),
    extras: JobExtras | None = None,
    bake: BakeFile | None = None,
    estimates: CostEstimates | None = None,
    judge: StallJudge | None = None,
) -> tuple[JobView, ...]:
    """Every job in the store (newest first, live state) with progress for the active ones
    and for the `watched` ones (a log pane is open: its step outline needs the steps of a
    finished build too)."""
    from rocmtui.core.jobs.control import list_jobs as core_list_jobs

    views = []
    followed: list[str] = []
    for record in core_list_jobs(config, limit=100, with_evidence=True, judge=judge):
        view = job_view(record, None, bake)
        shown = view.record
        if view.active or shown.id in watched:
            followed.append(shown.id)
            ended = None  # still running, or lost (the engine may still be building)
            if shown.state in (JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED):
                ended = shown.state == JobState.SUCCEEDED
            progress = cache.progress(shown.id, shown.target, shown.log_path, now, ended)
            if progress is not None and shown.state == JobState.STALLED:
                progress = replace(progress, rate=None, eta=None)  # nothing moves: no ETA
            view = job_view(record, progress, bake)
        if extras is not None:  # the registry's word on a push, cache statistics, images
            found = extras.fields(shown.id, record.job_dir, shown.target, shown.arch or None)
            view = replace(view, **found)
        if estimates is not None and view.active:
            eta = view.progress.eta if view.progress is not None else None
            view = replace(view, estimate=running_estimate(estimates, record, now, eta))
        views.append(view)
    cache.forget_except(followed)
    if judge is not None:  # what it keeps per build (a log's tail, an OOM count): active only
        judge.forget_except({v.record.id for v in views if v.active})
    return tuple(views)


def running_estimate(
    estimates: CostEstimates, record: JobRecord, now: float, eta: float | None = None
) -> str | None:
    """A running build's `≈ 2h10m, warm as last time` (or its overtime flag); None when the
    history cannot be read (the row says nothing rather than fail the jobs round)."""
    from rocmtui.core.jobs.store import JobStoreError

    try:
        return estimates.running(
            record.target, record.arch, record.node, record.duration(now), now, eta
        )
    except JobStoreError:
        return None


def launch(
    config: FleetConfig,
    bake: BakeFile,
    plan: BakePlan,
    env: Mapping[str, str],
    push_confirmed: bool,
) -> JobView:
    """Start the plan the dialog showed through the core, which refuses what it must
    (read-only, locks, login): exactly the core's Plan it holds, never resolved again.
    `push_confirmed` is the operator's answer to the push question: a plan that pushes
    without it is refused, never pushed unasked. A view with no core Plan (one recorded for a
    test) is resolved and started by name."""
    from rocmtui.core.jobs.launch import launch_job, start_plan

    allow = plan.granted  # only what the operator granted in the dialog's question
    if plan.core_plan is not None:
        started = start_plan(config, plan.core_plan, yes=push_confirmed, env=env, allow=allow)
        return job_view(started, None)
    record = launch_job(
        config,
        bake,
        target=plan.target,
        arch=plan.arch,
        node_name=plan.node,
        push=plan.push_switch,
        yes=push_confirmed,
        env=env,
        overrides={**env_overrides(bake, env, config.variables), **dict(plan.overrides)},
        allow=allow,
    )
    return job_view(record, None)


def cancel(config: FleetConfig, job_id: str) -> None:
    """Cancel a job through the core (SIGTERM to its group, SIGKILL after the grace period)."""
    from rocmtui.core.jobs.control import cancel_job

    cancel_job(config, job_id)
