"""The console's only door to the core: blocking calls, run by the screen in named workers.

Every method here may block (probes, the job store, `bake --print`); none may be called on the
event loop. Results come back as the frozen views of `rocmtui.console.backend.views`, so the
widgets never depend on the exact shape of the core's records. The fleet's rounds come through
a `RoundFeed` (rounds.py) that the backend composes and speaks for. Read-only mode is the
core's rule: a read-only backend hands the core a read-only fleet config, and the core's launch
and cancel refuse, as they do for `rocmtui --read-only bake`.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from msgspec.structs import replace

from rocmtui.console.backend import adapters as core_adapters
from rocmtui.console.backend import calls
from rocmtui.console.backend.jobextras import JobExtras
from rocmtui.console.backend.rounds import RoundFeed
from rocmtui.console.backend.views import BakePlan, BakeView, JobView, PrunePreview
from rocmtui.core.bake.find import check_found
from rocmtui.core.config.fleetfile import FleetConfig
from rocmtui.core.hostmonitor.sources import (
    MonitorFailed,
    MonitorGone,
    ProbeSource,
)
from rocmtui.core.jobs.refusals import ReadOnlyRefused
from rocmtui.core.snapshots import FleetSnapshot
from rocmtui.core.states import JobState

if TYPE_CHECKING:  # a type only: the bake file is read when the panel asks for it
    from rocmtui.core.bake.file import BakeFile
    from rocmtui.core.costbook.estimate import CostEstimates
    from rocmtui.core.placement.facts import Placement
    from rocmtui.core.verdicts.context import StallJudge

VERDICT_SLACK = 0.05  # s after a silence passes the threshold before its jobs are read again
ReadOnlyError = ReadOnlyRefused  # what a read-only console's launch or cancel raises
__all__ = ["FleetBackend", "MonitorFailed", "MonitorGone", "ReadOnlyError"]


class FleetBackend:
    """Blocking access to probes, the bake file, and jobs for one fleet file."""

    def __init__(
        self,
        config: FleetConfig,
        read_only: bool = False,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.config = config
        self.read_only = read_only
        self.env = dict(os.environ if env is None else env)
        self._watched: frozenset[str] = frozenset()
        self._lock = threading.Lock()
        self._progress = core_adapters.ProgressCache()
        self._extras = JobExtras()
        self._bake: BakeFile | None = None
        self._estimates: CostEstimates | None = None
        self._judge: StallJudge | None = None
        #: Where the rounds come from, relayed (rounds.py).
        self.rounds = RoundFeed(
            lambda: self.config, lambda fleet: self.verdicts().observe_fleet(fleet)
        )

    @property
    def read_only(self) -> bool:
        """Whether the core refuses this backend's launches and cancels."""
        return self.config.read_only

    @read_only.setter
    def read_only(self, value: bool) -> None:
        if value and not self.config.read_only:
            self.config = replace(self.config, read_only=True)

    # ------------------------------------------------------------------ fleet probes

    def adopt_monitor(self, source: ProbeSource | subprocess.Popen[bytes]) -> None:
        """Use a feed opened early (before Textual was imported), its first round read now
        (`RoundFeed.adopt_monitor`)."""
        self.rounds.adopt_monitor(source)

    @property
    def source(self) -> str:
        """Where rounds come from now: `sources.MONITOR`, `sources.OWN`, or "" before any."""
        return self.rounds.source

    def take_first_round(self) -> FleetSnapshot | None:
        """The adopted feed's first round if it has already come (never waits)."""
        return self.rounds.take_first_round()

    def run_monitor(
        self,
        publish: Callable[[FleetSnapshot], object],
        source_changed: Callable[[str, str], object] | None = None,
    ) -> None:
        """Relay rounds until `stop_monitor()`; blocks (a worker thread; `RoundFeed.run_monitor`
        says from where, and what its end raises)."""
        self.rounds.run_monitor(publish, source_changed)

    def refresh_now(self) -> None:
        """Ask for a round now (thread-safe, never blocks)."""
        self.rounds.refresh_now()

    def stop_monitor(self) -> None:
        """End the feed without waiting for it (safe on the event loop)."""
        self.rounds.stop_monitor()

    # ------------------------------------------------------------------ bake file

    def load_bake(self) -> BakeView:
        """Targets, arches and the effective variables (resolved by bake, with their sources)."""
        # on first use: kept off the console's start
        from rocmtui.core.bake.file import load_bake

        check_found(self.config)
        bake = load_bake(self.config.bake_file)
        self._bake = bake
        return calls.bake_view(self.config, bake, self.env)

    def plan(
        self,
        target: str,
        arch: str | None,
        node: str,
        push: bool,
        overrides: Mapping[str, str] | None = None,
    ) -> BakePlan:
        """What a launch of this choice will do: the core's `LaunchPlan` (arch, push, the
        registries it pushes to, `bake --print` under the job's environment), kept in the view
        so that Start launches exactly it, with the command, the printed lines that differ
        from the defaults marked, and what such a build cost before. `overrides` (the dialog's
        variables) go over the operator's environment overrides."""
        # on first use: kept off the console's start
        from rocmtui.core.bake import resolve as bakeprint
        from rocmtui.core.bake.file import BakeError
        from rocmtui.core.jobs.plan import resolve_plan
        from rocmtui.core.text.redact import Redactor, is_secret_name

        config, bake, env = self.config, self.bake(), self.env

        chosen = dict(overrides or {})
        applied = {**core_adapters.env_overrides(bake, env, config.variables), **chosen}
        default_env = bakeprint.bake_environment(env, {}, bake_variables=bake.variables)
        # the defaults' print (what the marks compare against) runs beside the launch's own: two
        # bake processes at once, not one after the other, before the operator sees the plan
        with ThreadPoolExecutor(1, thread_name_prefix="bake-print-defaults") as beside:
            defaults = beside.submit(bakeprint.bake_print, bake.path, [target], default_env)
            preview = resolve_plan(config, bake, target, arch, node, push, env, applied)
            try:
                base = set(core_adapters.print_lines(defaults.result()))
            except BakeError:  # nothing to compare with: nothing marked
                base = set(core_adapters.print_lines(preview.printed))
        # the command as it runs once the operator grants what bake asks for (Start asks)
        command = tuple(preview.command(env, allow=[p.grant for p in preview.privileges]))
        # secrets by name and by value: the environment's, and a secret-named variable set here
        redactor = Redactor(env, {k: v for k, v in chosen.items() if is_secret_name(k)})
        resolved = core_adapters.print_lines(preview.printed)
        changed = frozenset(i for i, line in enumerate(resolved) if line not in base)
        made = BakePlan(
            target=target,
            arch=preview.arch,
            node=preview.node.name,
            push=preview.pushes,
            command=command,
            resolved=tuple(redactor.redact_text(line) for line in resolved),
            changed=changed,
            error=preview.print_error,
            push_switch=push,
            overrides=tuple(sorted(chosen.items())),
            push_hosts=preview.push_hosts,
            missing_logins=preview.missing_logins,
            arch_pinned=preview.pinned,
            ready=preview.ready,
            privileges=preview.privileges,
            core_plan=preview,
        )
        # on first use: kept off the console's start
        from rocmtui.core.jobs.store import JobStoreError

        try:
            said = self.estimates().before_start(made.target, made.arch, made.node)
        except JobStoreError:
            return made
        return replace(made, estimate=said)

    def placement(
        self,
        target: str,
        arch: str,
        original: str | None,
        fleet: FleetSnapshot | None,
        overrides: Mapping[str, str] | None = None,
    ) -> Placement:
        """Where `target` × `arch` would finish first, by `fleet` (the console's latest
        snapshot) and the job store, with the launch's variables: the bake dialog's node
        estimates (blocking)."""
        # on first use: kept off the console's start
        from rocmtui.core.bake.file import ARCH_VARIABLE
        from rocmtui.core.placement.gather import placement_for

        bake = self.bake()
        declares = ARCH_VARIABLE in bake.variables
        return placement_for(
            self.config, fleet, target, arch, bake.arches, declares, original=original,
            overrides=overrides,
        )  # fmt: skip

    def estimates(self) -> CostEstimates:
        """What builds cost, from the job store's history (made when first asked)."""
        if self._estimates is None:
            # on first use: kept off the console's start
            from rocmtui.core.costbook.estimate import CostEstimates
            from rocmtui.core.jobs.store import JobStore

            store = JobStore.for_config(self.config)
            self._estimates = CostEstimates(store, self.config.history_retention_days)
        return self._estimates

    def verdicts(self) -> StallJudge:
        """The stall verdicts of this console's jobs, fed with every round's vitals (made
        when first asked)."""
        with self._lock:
            if self._judge is None:
                # on first use: kept off the console's start
                from rocmtui.core.costbook.usual import UsualTimes
                from rocmtui.core.jobs.store import JobStore
                from rocmtui.core.verdicts.context import StallJudge

                store = JobStore.for_config(self.config)
                self._judge = StallJudge(self.config, UsualTimes(store).of)
            return self._judge

    def bake(self) -> BakeFile:
        """The loaded bake file (loaded now if the panel has not done it yet)."""
        if self._bake is None:
            # on first use: kept off the console's start
            from rocmtui.core.bake.file import load_bake

            check_found(self.config)
            self._bake = load_bake(self.config.bake_file)
        return self._bake

    # ------------------------------------------------------------------ jobs

    def jobs(self, now: float | None = None) -> tuple[JobView, ...]:
        """Recent and running jobs of every operator, with progress for the active ones and
        the watched ones (`watch_progress`)."""
        now = time.time() if now is None else now
        return calls.list_jobs(
            self.config, self._progress, now, self._watched, self._extras, self._bake,
            self.estimates(), self.verdicts(),
        )  # fmt: skip

    def next_verdict_in(self, jobs: Iterable[JobView]) -> float | None:
        """Seconds until the first running, not yet judged build's silence passes
        `stall_after_seconds` (its verdict is due then, not a refresh later), or None."""
        now = time.time()
        due = []
        for job in jobs:
            if job.record.state is not JobState.RUNNING or job.record.verdict is not None:
                continue
            try:
                last = os.stat(job.record.log_path).st_mtime
            except OSError:
                continue
            left = last + self.config.stall_after_seconds - now + VERDICT_SLACK
            if left > 0:  # one already past it was judged, or is not judged (its link is down)
                due.append(left)
        return min(due) if due else None

    def watch_progress(self, job_ids: Iterable[str]) -> None:
        """Jobs whose progress is wanted whether or not they still run (open log panes)."""
        self._watched = frozenset(job_ids)  # one assignment: safe beside the jobs thread

    def launch(self, plan: BakePlan, push_confirmed: bool = False) -> JobView:
        """Start a resolved plan detached through the core (which refuses it when read-only,
        and a push the operator did not confirm)."""
        return calls.launch(self.config, self.bake(), plan, self.env, push_confirmed)

    def launch_run(
        self,
        target: str,
        nodes: tuple[str, ...],
        overrides: Mapping[str, str],
        fleet: FleetSnapshot | None,
        push: bool = False,
    ) -> str:
        """Start a fleet run through the core (refused when read-only); one line: its id and
        where it did not start. `push` only once the operator confirmed it."""
        return calls.launch_run(
            self.config, self.bake(), target, nodes, overrides, self.env, fleet, push
        )

    def cancel(self, job_id: str) -> None:
        """Cancel a job through the core (which refuses it when read-only)."""
        calls.cancel(self.config, job_id)

    def prune_preview(self, node: str) -> PrunePreview:
        """What a prune of `node`'s build cache would remove (asks its engine)."""
        return calls.prune_preview(self.config, node, self.env)

    def prune(self, node: str) -> str:
        """Prune `node`'s build cache through the core (which refuses it when read-only or
        while a build runs there, and records it); one line saying what went."""
        return calls.prune(self.config, node, self.env)
