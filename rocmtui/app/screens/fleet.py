"""The fleet screen: coordinates the panels, the feeds, the dialogs and the log panes.

It holds the latest `ConsoleData`, re-renders panels when a feed reports, and turns the
operator's keys into core actions run in workers. Panels render; this screen decides. The job
and bake actions (bake, rebuild, log, cancel) are in `fleet_actions.FleetActions`, mixed in here.
"""

from __future__ import annotations

import os
from collections import deque
from dataclasses import replace
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Container
from textual.worker import Worker, WorkerState

from rocmtui.app import keys
from rocmtui.app.alarms import BuildAlarms
from rocmtui.app.feeds import Feeds, describe
from rocmtui.app.messages import (
    BakeLoaded,
    CancelRequested,
    FleetUpdated,
    JobStarted,
    JobsUpdated,
    LogRequested,
    PanelFailed,
    ProbeSourceChanged,
)
from rocmtui.app.model import ConsoleData, pushes_ended
from rocmtui.app.screens.catalog import CatalogScreen
from rocmtui.app.screens.fleet_actions import FleetActions
from rocmtui.app.text import clean
from rocmtui.app.userthreads import run_on_own_thread
from rocmtui.app.widgets.common import Palette, StatusLine
from rocmtui.app.widgets.fleet import (
    FleetPanel,
    JobsPanel,
    NodesPanel,
    ServicesPanel,
    VariablesPanel,
    WatchPanel,
)
from rocmtui.app.widgets.footer import QuietFooter
from rocmtui.core.hostmonitor.links import MONITOR
from rocmtui.core.states import JobState
from rocmtui.core.units import fmt_age

if TYPE_CHECKING:  # dialogs are imported when first opened, not before the first frame
    from rocmtui.app.dialogs.bake_choices import BakeRequest
    from rocmtui.core.snapshots import FleetSnapshot

HISTORY = 32  # latency samples kept per service
BAKE_DELAY = 2.0  # s: the bake file is read by then even if no probe round came back


class FleetScreen(FleetActions, CatalogScreen):
    """Nodes, services, jobs and variables on one screen; the keys that act on them."""

    SCOPE = "fleet"
    BINDINGS: ClassVar[list[BindingType]] = list(keys.bindings("fleet"))
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (150, "-wide")]  # noqa: RUF012 (Textual's type)
    VERTICAL_BREAKPOINTS = [(0, "-short"), (48, "-tall")]  # noqa: RUF012

    def __init__(self) -> None:
        super().__init__(id="fleet")
        self.data = ConsoleData()
        self.history: dict[str, deque[float]] = {}
        self._alarms: BuildAlarms | None = None
        self._palette: Palette | None = None
        self._last_fleet_at: float | None = None
        self.feeds: Feeds | None = None
        self.source = ""  # where rounds come from: links.MONITOR, links.OWN
        self.monitor_lost: str | None = None  # why the host's monitor went, until it is back
        self._bake_requested = False
        self._pending_bake: BakeRequest | None = None  # `b`/`r` pressed before the file was read

    def compose(self) -> ComposeResult:
        """Status line, the four panels, the footer."""
        # the breakpoint classes Textual would add on the first resize, added now: adding them
        # after mount re-styled every widget twice (~20 ms before the first frame)
        width, height = self.app.size
        for size, points in (
            (width, self.HORIZONTAL_BREAKPOINTS),
            (height, self.VERTICAL_BREAKPOINTS),
        ):
            self.add_class(*self._get_breakpoint_classes(size, points))
        yield StatusLine(id="statusbar")
        with Container(id="panels"):
            yield NodesPanel(id="nodes")
            yield ServicesPanel(id="services")
            yield JobsPanel(id="jobs")
            yield VariablesPanel(id="variables")
            yield WatchPanel(id="watch")
        yield QuietFooter()

    def on_mount(self) -> None:
        """Start the feeds (unless a test feeds recorded data) and the age ticker."""
        refresh = self.console.config.refresh_seconds
        for panel in self.query(FleetPanel):
            panel.late_after = max(
                3 * refresh, refresh + self.console.config.probe_deadline_seconds
            )
        self.query_one(NodesPanel).disk_warn_percent = self.console.config.disk_warn_percent
        if self.console.live:
            self.source = self.console.backend.source
        self.render_status()
        if self.console.live:
            first = self.console.backend.take_first_round()
            if first is not None:  # came while Textual started: in the first frame, not the third
                self.show_fleet(first)
            self.feeds = Feeds(self.console.backend, self.post_message)
            # the bake file is parsed after the first round is on screen (or after BAKE_DELAY):
            # its parser holds the GIL ~0.1 s, which the first frame with fleet data waited for
            self.set_timer(BAKE_DELAY, self.load_bake, name="bake-file-fallback")
            self.run_worker(
                self.feeds.fleet_loop,
                name="fleet-monitor",
                group="monitor",
                thread=True,
                exclusive=True,
                exit_on_error=False,
            )
            # the job store after the first frame: its imports (sqlite3 ...) and first read
            # in a thread took the GIL from the first frame with the round taken above
            self.call_after_refresh(self._start_jobs_loop)
            self.set_interval(max(1.0, refresh), self.tick, name="age-ticker")
        self.query_one("#nodes-table").focus()

    def _start_jobs_loop(self) -> None:
        if self.feeds is not None and not self.feeds.stopping.is_set():
            self.run_worker(
                self.feeds.jobs_loop,
                name="job-store",
                group="jobs",
                thread=True,
                exclusive=True,
                exit_on_error=False,
            )

    def load_bake(self) -> None:
        """Read the bake file once, on a thread of its own (the variables panel fills when it
        is read): `b` pressed before then waits for it, never behind the views' pool."""
        if self._bake_requested or self.feeds is None:
            return
        self._bake_requested = True
        load = self.feeds.load_bake
        self.run_worker(
            run_on_own_thread(load, name="bake-file", daemon=True),
            name="bake-file",
            group="bake",
            exit_on_error=False,
        )

    def on_unmount(self) -> None:
        """Let the loops end with the console."""
        self.stop_feeds()

    def stop_feeds(self) -> None:
        """Ask the probe and job loops to end (they finish their current round)."""
        if self.feeds is not None:
            self.feeds.stop()
        published = self.console.open_published_screen
        if published is not None:  # a fill in flight is killed, not waited for
            published.stop_feed()

    # ---------------------------------------------------------------- rendering

    @property
    def alarms(self) -> BuildAlarms:
        """The bell and notifications for builds that stall or fail (made when first fed)."""
        if self._alarms is None:
            config = self.console.config
            self._alarms = BuildAlarms(self.app, config.stall_after_seconds, self.console.clock)
        return self._alarms

    @property
    def palette(self) -> Palette:
        """Theme colours for the state words (resolved once)."""
        if self._palette is None:
            self._palette = Palette.from_app(self.app)
        return self._palette

    def theme_changed(self) -> None:
        """A new theme: resolve the state words' colours again and repaint."""
        self._palette = None
        if self.is_mounted:
            self.render_all()

    def tick(self) -> None:
        """Between rounds nothing is repainted (bytes cost latency over ssh); once the data is
        late the ages are re-rendered every tick so the screen says it is late, not frozen."""
        fleet = self.data.fleet
        config = self.console.config
        late_after = config.refresh_seconds * 1.5 + config.probe_deadline_seconds
        if fleet is None or self.console.clock() - fleet.taken_at > late_after:
            self.render_all()

    def render_all(self) -> None:
        """Re-render every panel at the current time (only changed cells repaint)."""
        self.render_panels("nodes", "services", "jobs", "variables")

    def render_panels(self, *names: str) -> None:
        """Re-render the named panels and the status line (work only where data changed)."""
        now = self.console.clock()
        for name in names:
            self.query_one(f"#{name}", FleetPanel).show(self.data, now, self.palette)
        self.render_status()

    @property
    def monitor_log(self) -> str:
        """The monitor process's log, as short as the home folder allows."""
        from rocmtui.core.debuglog import monitor_log

        path = str(monitor_log(self.console.config))
        home = os.path.expanduser("~")
        return "~" + path[len(home) :] if home != "/" and path.startswith(home + "/") else path

    @property
    def bake_label(self) -> str:
        """Which bake file the console read: its name, `(demo)` for the project's own, or
        `no bake file` when the built-in default found none."""
        config = self.console.config
        if config.bake_problem and not config.bake_file.exists():
            return "no bake file"
        demo = " (demo)" if config.bake_found_by.startswith("the project's demo") else ""
        return f"{clean(config.bake_file.name, 40)}{demo}"  # .hcl says what it is: 80 columns

    def render_status(self) -> None:
        """One line: fleet file, health summary, age of the last round, read-only."""
        now = self.console.clock()
        config = self.console.config
        line = Text()
        line.append(" rocmtui ", style="bold reverse")
        line.append(" " + clean(config.source.name if config.source else "built-in default", 60))
        line.append(" · " + self.bake_label, style=self.palette.muted)
        fleet = self.data.fleet
        if fleet is None:
            line.append(" · waiting for the first probe round…", style=self.palette.muted)
        else:
            age = now - fleet.taken_at
            late = age > 3 * config.refresh_seconds + config.probe_deadline_seconds
            stalled = [j for j in self.data.jobs if j.state == JobState.STALLED]
            word, style = (
                ("healthy", self.palette.good) if fleet.healthy else ("attention", self.palette.bad)
            )
            if stalled:
                word, style = f"{len(stalled)} stalled", self.palette.alarm
            line.append(" · ")
            line.append(f" {word} ", style=style)
            running = sum(1 for j in self.data.jobs if j.active)
            line.append(f" · {running} building")
            if fleet.pending:  # an interim snapshot: the rest answered, these have not yet
                waiting = ", ".join(clean(name, 30) for name in fleet.pending[:3])
                more = f" and {len(fleet.pending) - 3} more" if len(fleet.pending) > 3 else ""
                line.append(f" · waiting for {waiting}{more}", style=self.palette.muted)
            else:
                line.append(f" · probed {fmt_age(age)} ago")
            if late:
                line.append(" (late: probes are not answering)", style=self.palette.warn)
            full = state_disk_full(fleet, config.disk_warn_percent)
            if full is not None:  # builds' logs and outcomes live there
                line.append(f" · state disk {full:.0f}% full", style=self.palette.bad)
            if fleet.failed_rounds:
                rounds = "round" if fleet.failed_rounds == 1 else "rounds"
                line.append(
                    f" · {fleet.failed_rounds} probe {rounds} failed: why in {self.monitor_log}",
                    style=self.palette.warn,
                )
        if self.source == MONITOR:
            line.append(" · shared monitor", style=self.palette.muted)
        elif self.monitor_lost is not None:
            line.append(" · monitor gone: probing here", style=self.palette.warn)
        if self.console.read_only:
            line.append(" · READ-ONLY", style=self.palette.warn)
        self.query_one("#statusbar", StatusLine).show(line)

    # ---------------------------------------------------------------- feed messages

    @on(FleetUpdated)
    def _fleet(self, message: FleetUpdated) -> None:
        self.show_fleet(message.snapshot)

    def show_fleet(self, snap: FleetSnapshot) -> None:
        """A probe round: the nodes and services panels, the latency history, the status."""
        for svc in (snap.registry, snap.webdav):
            # one point per round: an interim snapshot's answers come again in the round's own
            if svc.latency is not None and not snap.interim:
                self.history.setdefault(svc.kind, deque(maxlen=HISTORY)).append(svc.latency)
        latency = {k: tuple(v) for k, v in self.history.items()}
        self.data = replace(self.data, fleet=snap, latency=latency)
        for name in ("nodes", "services"):
            self.query_one(f"#{name}", FleetPanel).show_fault(None)
        # jobs too: its silences and the nodes' are worded at one `now`, so they agree
        self.render_panels("nodes", "services", "jobs")
        if not self._bake_requested:
            self.call_after_refresh(self.load_bake)  # the first round is drawn: now the bake file

    @on(ProbeSourceChanged)
    def _source(self, message: ProbeSourceChanged) -> None:
        """The host's monitor attached, or gone (this console probes on its own meanwhile)."""
        was, self.source = self.source, message.kind
        if message.kind == "lost":
            self.monitor_lost = message.detail
            self.notify(
                f"{message.detail}. This console probes on its own until one is back.",
                title="Monitor gone",
                severity="warning",
                timeout=15,
                markup=False,
            )
        elif message.kind == MONITOR:
            if was and was != MONITOR:
                self.notify(f"Attached to the {message.detail}.", title="Monitor", markup=False)
            self.monitor_lost = None
        self.render_status()

    @on(JobsUpdated)
    def _jobs(self, message: JobsUpdated) -> None:
        self.query_one("#jobs", FleetPanel).show_fault(None)
        if message.jobs == self.data.jobs:
            return  # the usual idle round: nothing to draw
        ended_push = pushes_ended(self.data.jobs, message.jobs)
        self.data = replace(self.data, jobs=message.jobs)
        self.alarms.update(message.jobs)
        published = self.console.open_published_screen
        if published is not None and ended_push:  # the registry's answer may have changed
            published.refresh_soon()
        self.render_panels("jobs", "nodes")
        self.watch_build()
        logs = self.console.open_logs_screen
        if logs is not None:
            logs.update_jobs(message.jobs)

    def watch_build(self) -> None:
        """The watch panel follows a build only where the terminal has room to show it."""
        room = self.has_class("-wide") and self.has_class("-tall")
        self.query_one(WatchPanel).watch_job(self.data.jobs, room)

    def on_resize(self) -> None:
        """Breakpoints may have changed: the watch panel may fit now, or no longer."""
        self.call_after_refresh(self.watch_build)

    @on(BakeLoaded)
    def _bake(self, message: BakeLoaded) -> None:
        self.data = replace(self.data, bake=message.bake)
        panel = self.query_one("#variables", FleetPanel)
        panel.show_fault(message.bake.error)
        self.render_panels("variables")
        pending, self._pending_bake = self._pending_bake, None
        if pending is not None:
            self.open_bake(pending)

    @on(PanelFailed)
    def _failed(self, message: PanelFailed) -> None:
        self.query_one(f"#{message.panel}", FleetPanel).show_fault(message.reason)

    # ---------------------------------------------------------------- worker errors

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The one place where a worker that died shows up on screen."""
        worker = event.worker
        if event.state != WorkerState.ERROR or worker.error is None:
            return
        panel = {"monitor": "nodes", "jobs": "jobs", "bake": "variables"}.get(worker.group)
        reason = f"{worker.name}: {describe(worker.error)}"
        if panel:
            self.query_one(f"#{panel}", FleetPanel).show_fault(reason)
        else:
            self.notify(reason, title="Failed", severity="error", markup=False)

    # ---------------------------------------------------------------- keys
    # bake, rebuild, open_log, cancel_job and their workers are FleetActions' (fleet_actions.py)

    def action_show_logs(self) -> None:
        """`L`: the log panes already open."""
        self.app.push_screen(self.console.logs_screen)

    def action_show_matrix(self) -> None:
        """`m`: what the fleet has published (target × arch) and the pinned versions."""
        self.app.push_screen(self.console.published_screen)

    def action_refresh(self) -> None:
        """Probe and re-read now."""
        if self.feeds is not None:
            self.feeds.poke()

    # ---------------------------------------------------------------- intents
    # the handlers stay on the screen: Textual collects `@on` handlers only from DOM classes,
    # and FleetActions is a plain mixin at run time

    @on(LogRequested)
    def _log(self, message: LogRequested) -> None:
        job = next((j for j in self.data.jobs if j.id == message.job_id), None)
        if job is None:
            self.notify("That job is not in the job store (yet).", severity="warning")
            return
        self.console.logs_screen.open_job(job)
        if self.app.screen is not self.console.logs_screen:
            self.app.push_screen(self.console.logs_screen)

    @on(CancelRequested)
    def _cancel_requested(self, message: CancelRequested) -> None:
        self.cancel(message.job_id)

    @on(JobStarted)
    def _started(self, message: JobStarted) -> None:
        job = message.job
        self.notify(
            f"{clean(job.target)} {clean(job.arch or '')} on {clean(job.node)}: "
            f"job {clean(job.id)}",
            title="Build started",
            markup=False,
        )
        self.data = replace(self.data, jobs=(job, *[j for j in self.data.jobs if j.id != job.id]))
        self.render_all()
        self.post_message(LogRequested(job.id))
        if self.feeds is not None:
            self.feeds.poke()


def state_disk_full(fleet: FleetSnapshot, warn_at: float) -> float | None:
    """How full the local node's disk (the state folder's) is, once it is `warn_at` percent
    full or more; None below that, or when no reading makes sense (the status line must
    never fail on a round a panel could not show)."""
    for node in fleet.nodes:
        used = node.host.disk_percent if node.host else None
        if isinstance(used, int | float) and used >= warn_at:
            return float(used)
    return None
