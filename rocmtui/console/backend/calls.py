"""The door's calls that come back as views: the bake file as bake resolves it (the variables
panel, the names the dialog offers), the job list with progress and estimates, a launch, a
cancel, a fleet run, a prune.

Each calls the core (it runs `bake --print`, reads the job store, starts or signals a build)
and hands the records to `adapters`, which turns them into the frozen views of `model`;
`FleetBackend` (access.py) calls these from the screens' workers, never on the event loop.
What the console shows is what it starts: the variables panel resolves values under the
environment a launch from this console uses (a scrubbed environment plus the operator's
variables named like bake variables, passed as explicit overrides).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from msgspec.structs import replace

from rocmtui.console.backend.adapters import ProgressCache, env_overrides, job_view
from rocmtui.console.backend.views import BakePlan, BakeView, JobView, PrunePreview, VariableView
from rocmtui.core.config.fleetfile import FleetConfig
from rocmtui.core.states import JobState
from rocmtui.core.text.units import fmt_bytes

if TYPE_CHECKING:  # imported when first used, not at start-up
    from rocmtui.console.backend.jobextras import JobExtras
    from rocmtui.core.bake.file import BakeFile
    from rocmtui.core.costbook.estimate import CostEstimates
    from rocmtui.core.jobs.record import JobRecord
    from rocmtui.core.snapshots import FleetSnapshot
    from rocmtui.core.verdicts.context import StallJudge

PRINT_TIMEOUT = 20.0


def bake_view(config: FleetConfig, bake: BakeFile, env: Mapping[str, str]) -> BakeView:
    """Targets, arches and every variable's effective value, resolved by bake itself."""
    # on first use: kept off the console's start
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
    # on first use: kept off the console's start
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
    # on first use: kept off the console's start
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
    # on first use: kept off the console's start
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
            view = replace(view, **found, failure=extras.failure(record))
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
    # on first use: kept off the console's start
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
    # on first use: kept off the console's start
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
    # on first use: kept off the console's start
    from rocmtui.core.jobs.control import cancel_job

    cancel_job(config, job_id)


def launch_run(
    config: FleetConfig,
    bake: BakeFile,
    target: str,
    nodes: tuple[str, ...],
    overrides: Mapping[str, str],
    env: Mapping[str, str],
    fleet: FleetSnapshot | None,
    push: bool = False,
) -> str:
    """Start a fleet run through the core (refused when read-only); one line: its id and
    where it did not start. `push` only once the operator confirmed it."""
    # on first use: kept off the console's start
    from rocmtui.core.runs.launch import launch_run as core_launch_run

    run, starts = core_launch_run(config, bake, target, nodes, overrides, push, push, env, fleet)
    started = sum(1 for s in starts if s.job is not None)
    missed = "; ".join(f"{s.node}: {s.why_not}" for s in starts if s.job is None)
    return f"{run.id}: {started} of {len(starts)} nodes" + (f"; not {missed}" if missed else "")


def prune_preview(config: FleetConfig, node: str, env: Mapping[str, str]) -> PrunePreview:
    """What a prune of `node`'s build cache would remove (asks its engine)."""
    # on first use: kept off the console's start
    from rocmtui.core.prune.action import plan_node
    from rocmtui.core.prune.plan import PruneFilters, summary

    plan = plan_node(config, node, PruneFilters(), env)
    return PrunePreview(plan.node, tuple(summary(plan)), len(plan.records))


def prune(config: FleetConfig, node: str, env: Mapping[str, str]) -> str:
    """Prune `node`'s build cache through the core (which refuses it when read-only or while a
    build runs there, and records it); one line saying what went."""
    # on first use: kept off the console's start
    from rocmtui.core.prune.action import prune_node
    from rocmtui.core.prune.plan import PruneFilters

    done = prune_node(config, node, PruneFilters(), lambda _plan: True, env=env)
    gone = done.result
    if gone is None:
        return f"Nothing to prune on {node}."
    return f"Pruned {len(gone.deleted)} records ({fmt_bytes(gone.reclaimed_bytes)}) on {node}."
