"""The fleet screen: nodes, services, jobs and variables on one screen, fed by the feeds.

It holds the latest `ConsoleData`, re-renders panels when a feed reports, and turns the
operator's keys on the focused row into intents (`rocmtui.console.intents`) that go up to the
App's owner: it opens no dialog and knows no other screen. Panels render; what a row key is
about is decided by its `RowIntents` (console/rowintents.py), its panels are mounted by
`FleetPanels` (console/panelmount.py), and its feeds run in `FeedWorkers`
(console/feedworkers.py).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, ClassVar

from msgspec.structs import replace
from textual import on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.geometry import Size
from textual.message import Message
from textual.worker import Worker, WorkerState

from rocmtui.console import keys, textual_private
from rocmtui.console.alarms import BuildAlarms
from rocmtui.console.backend.access import FleetBackend
from rocmtui.console.backend.names import MONITOR
from rocmtui.console.backend.refresh import failure_text
from rocmtui.console.backend.views import (
    ConsoleData,
    JobView,
    pushes_ended,
)
from rocmtui.console.feedworkers import FeedWorkers
from rocmtui.console.intents import (
    HistoryRequested,
    JobsChanged,
    LogsRequested,
    NewRunRequested,
    PublishedRequested,
    RunsRequested,
)
from rocmtui.console.messages import (
    BakeLoaded,
    FleetUpdated,
    JobsUpdated,
    PanelFailed,
    ProbeSourceChanged,
)
from rocmtui.console.panelmount import LATER, FleetPanels
from rocmtui.console.rowintents import Notice, RowIntents
from rocmtui.console.screens.catalog import CatalogScreen
from rocmtui.console.widgets.common import StatusLine
from rocmtui.console.widgets.panels import (
    WatchPanel,
)
from rocmtui.console.widgets.statusline import StatusFacts, status_line
from rocmtui.core.config.fleetfile import FleetConfig

if TYPE_CHECKING:
    from textual.theme import Theme

    from rocmtui.core.snapshots import FleetSnapshot

HISTORY = 32  # latency samples kept per service


class FleetScreen(CatalogScreen):
    """Nodes, services, jobs and variables on one screen; the keys that act on them."""

    SCOPE = "fleet"
    BINDINGS: ClassVar[list[BindingType]] = list(keys.bindings("fleet"))
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (150, "-wide")]  # noqa: RUF012 (Textual's type)
    VERTICAL_BREAKPOINTS = [(0, "-short"), (48, "-tall")]  # noqa: RUF012

    def __init__(
        self,
        config: FleetConfig,
        backend: FleetBackend,
        *,
        clock: Callable[[], float],
        live: bool,
        read_only: bool,
        keymap: Mapping[str, str],
    ) -> None:
        super().__init__(read_only=read_only, keymap=keymap, id="fleet")
        self.config = config
        self.backend = backend
        self.clock = clock
        self.live = live  # False: tests feed recorded snapshots, no probes run
        self.data = ConsoleData()
        self.history: dict[str, deque[float]] = {}
        self._alarms: BuildAlarms | None = None
        self._round_at: float | None = None  # the last whole round's time: the verdict's age
        #: The feeds, run in this screen's workers (console/feedworkers.py).
        self.feed_workers = FeedWorkers(self, backend)
        self.source = ""  # where rounds come from: links.MONITOR, links.OWN
        self.monitor_lost: str | None = None  # why the host's monitor went, until it is back
        self.panels = FleetPanels(config)  # the first frame has the nodes only (see compose)
        #: What the row keys are about (console/rowintents.py).
        self.row_intents = RowIntents(self, self.panels, lambda: self.data)

    def compose(self) -> ComposeResult:
        """Status line and the nodes panel: the first frame, which shows the round the monitor
        sent. The other panels and the footer are mounted right after it is painted
        (`_mount_the_rest`; console/panelmount.py says why)."""
        yield StatusLine(id="statusbar")
        yield self.panels.first()

    def fit_breakpoints(self, size: Size) -> None:
        """Take the breakpoint classes Textual would add on the first resize, before the screen
        is first styled (`RocmTui.get_default_screen`). Added after mount they re-styled every
        widget twice (~20 ms before the first frame); added in `compose`, the screen itself,
        once per class (~3.8 M instructions)."""
        classes = [
            *textual_private.breakpoint_classes(self, size.width, self.HORIZONTAL_BREAKPOINTS),
            *textual_private.breakpoint_classes(self, size.height, self.VERTICAL_BREAKPOINTS),
        ]
        self.add_class(*classes, update=self.is_attached)  # not styled yet: nothing to update

    async def _mount_the_rest(self) -> None:
        """After the first frame: the other panels and the footer, showing what came meanwhile."""
        await self.panels.mount_the_rest(self)
        self.render_panels(*LATER)
        self.watch_build()

    @property
    def all_mounted(self) -> bool:
        """Every panel and the footer are mounted (right after the first frame)."""
        return self.panels.all_mounted

    def panel_fault(self, name: str, reason: str | None) -> None:
        """Show (None: clear) why a panel's data is missing, once that panel is mounted."""
        self.panels.fault(name, reason)

    def on_mount(self) -> None:
        """Start the feeds (unless a test feeds recorded data) and the age ticker."""
        refresh = self.config.refresh_seconds
        # queued before any callback of the first frame below: the jobs and bake loops report
        # into panels that are mounted by then
        self.call_after_refresh(self._mount_the_rest)
        # after Textual has made the new theme's variables (the palette reads them)
        self.app.theme_changed_signal.subscribe(self, self.theme_changed)
        if self.live:
            self.source = self.backend.source
        self.render_status()
        if self.live:
            first = self.backend.take_first_round()
            if first is not None:  # came while Textual started: in the first frame, not the third
                self.show_fleet(first)
            self.feed_workers.start()
        self.set_interval(max(1.0, refresh), self.tick, name="age-ticker")
        self.panels.nodes.table.focus()

    def load_bake(self) -> None:
        """Read the bake file once, on a thread of its own (`FeedWorkers.load_bake`)."""
        self.feed_workers.load_bake()

    def on_unmount(self) -> None:
        """Let the loops end with the console."""
        self.stop_feeds()

    def stop_feeds(self) -> None:
        """Ask the probe and job loops to end (they finish their current round)."""
        self.feed_workers.stop()

    def poke(self) -> None:
        """Probe and re-read the job store now."""
        self.feed_workers.poke()

    def poke_jobs(self) -> None:
        """Re-read the job store now (the probes keep their pace)."""
        self.feed_workers.poke_jobs()

    # ---------------------------------------------------------------- rendering

    @property
    def alarms(self) -> BuildAlarms:
        """The bell and notifications for builds that stall or fail (made when first fed)."""
        if self._alarms is None:
            self._alarms = BuildAlarms(self.app, self.config.stall_after_seconds, self.clock)
        return self._alarms

    def theme_changed(self, theme: Theme | None = None) -> None:
        """A new theme: resolve the state words' colours again and repaint."""
        self._palette = None
        if self.is_mounted:
            self.render_all()

    def tick(self) -> None:
        """Between rounds nothing is repainted (bytes cost latency over ssh); once the data is
        late the ages are re-rendered every tick so the screen says it is late, not frozen."""
        fleet = self.data.fleet
        late_after = self.config.refresh_seconds * 1.5 + self.config.probe_deadline_seconds
        if fleet is None or self.clock() - (self._round_at or fleet.taken_at) > late_after:
            self.render_all()

    def render_all(self) -> None:
        """Re-render every panel at the current time (only changed cells repaint)."""
        self.render_panels("nodes", "services", "jobs", "variables")

    def render_panels(self, *names: str) -> None:
        """Re-render the named panels and the status line (work only where data changed)."""
        now = self.clock()
        for name in names:
            panel = self.panels.get(name)
            if panel is not None:  # else it shows self.data once mounted
                panel.show(self.data, now, self.palette)
        self.render_status()

    def render_status(self) -> None:
        """The status line (widgets/statusline.py words it)."""
        facts = StatusFacts(
            config=self.config,
            now=self.clock(),
            fleet=self.data.fleet,
            round_at=self._round_at,
            jobs=self.data.jobs,
            source=self.source,
            monitor_lost=self.monitor_lost is not None,
            read_only=self.read_only,
        )
        self.query_one("#statusbar", StatusLine).show(status_line(facts, self.palette))

    # ---------------------------------------------------------------- feed messages

    @on(FleetUpdated)
    def _fleet(self, message: FleetUpdated) -> None:
        self.show_fleet(message.snapshot)

    def show_fleet(self, snap: FleetSnapshot) -> None:
        """A probe round: the nodes and services panels, the latency history, the status."""
        if not snap.interim:  # a whole round: the verdict's age starts again
            self._round_at = snap.taken_at
            for svc in (snap.registry, snap.webdav):
                # one point per round: an interim snapshot's answers come again in its own
                if svc.latency is not None:
                    self.history.setdefault(svc.kind, deque(maxlen=HISTORY)).append(svc.latency)
        latency = {k: tuple(v) for k, v in self.history.items()}
        self.data = replace(self.data, fleet=snap, latency=latency)
        for name in ("nodes", "services"):
            self.panel_fault(name, None)
        # jobs too: its silences and the nodes' are worded at one `now`, so they agree
        self.render_panels("nodes", "services", "jobs")
        if not self.feed_workers.bake_requested:
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
        self.panel_fault("jobs", None)
        if message.jobs != self.data.jobs:  # else the usual idle round: nothing to draw
            self.show_jobs(message.jobs)
        else:  # but the alarms hear it: a first list, though empty, says what is not news
            self.alarms.update(message.jobs)

    def show_jobs(self, jobs: tuple[JobView, ...]) -> None:
        """A new job list: the panels, the alarms, the watched build; and up to the owner, for
        the log panes and the published screen."""
        ended_push = pushes_ended(self.data.jobs, jobs)
        self.data = replace(self.data, jobs=jobs)
        self.alarms.update(jobs)
        self.render_panels("jobs", "nodes")
        self.watch_build()
        self.post_message(JobsChanged(jobs, ended_push))

    def show_started(self, job: JobView) -> None:
        """A job this console just launched: its row now, before the job store's next round
        (asked for at once)."""
        self.show_jobs((job, *[j for j in self.data.jobs if j.record.id != job.record.id]))
        self.poke()

    def watch_build(self) -> None:
        """The watch panel follows a build only where the terminal has room to show it."""
        room = self.has_class("-wide") and self.has_class("-tall")
        for watch in self.query(WatchPanel):  # none before the panels after the first frame
            watch.watch_job(self.data.jobs, room)

    def on_resize(self) -> None:
        """Breakpoints may have changed: the watch panel may fit now, or no longer."""
        self.call_after_refresh(self.watch_build)

    @on(BakeLoaded)
    def _bake(self, message: BakeLoaded) -> None:
        """The variables panel fills (the message goes on up: a dialog may wait for it)."""
        self.data = replace(self.data, bake=message.bake)
        self.panel_fault("variables", message.bake.error)
        self.render_panels("variables")

    @on(PanelFailed)
    def _failed(self, message: PanelFailed) -> None:
        self.panel_fault(message.panel, message.reason)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The one place where a feed's worker that died shows up on screen."""
        worker = event.worker
        if event.state != WorkerState.ERROR or worker.error is None:
            return
        panel = {"monitor": "nodes", "jobs": "jobs", "bake": "variables"}.get(worker.group)
        reason = f"{worker.name}: {failure_text(worker.error)}"
        if panel:
            self.panel_fault(panel, reason)
        else:
            self.notify(reason, title="Failed", severity="error", markup=False)

    # ---------------------------------------------------------------- keys: intents go up

    def _act(self, answer: Message | Notice) -> None:
        """Post a row key's intent from this screen, or say why there is none."""
        if isinstance(answer, Notice):
            self.notify(answer.text, severity=answer.severity, markup=False)
        else:
            self.post_message(answer)

    def action_bake(self) -> None:
        """`b`: the bake dialog, on the focused row's node."""
        self._act(self.row_intents.bake())

    def action_rebuild(self) -> None:
        """`r`: exactly what the focused row's job built, on its node (`RowIntents.rebuild`)."""
        self._act(self.row_intents.rebuild())

    def action_open_log(self) -> None:
        """`l`: the log pane of the focused row's job (a node's running, else last, job)."""
        self._act(self.row_intents.open_log())

    def action_show_timeline(self) -> None:
        """`t`: the focused row's job's steps on a time axis."""
        self._act(self.row_intents.show_timeline())

    def action_cancel_job(self) -> None:
        """`c`: cancel the focused row's running job, after a confirmation."""
        self._act(self.row_intents.cancel_job())

    def action_prune(self) -> None:
        """`p`: the focused row's node's build cache, shown, then pruned once confirmed."""
        self._act(self.row_intents.prune())

    def action_show_logs(self) -> None:
        """`L`: the log panes already open."""
        self.post_message(LogsRequested())

    def action_show_matrix(self) -> None:
        """`m`: what the fleet has published (target × arch) and the pinned versions."""
        self.post_message(PublishedRequested())

    def action_show_history(self) -> None:
        """`h`: what builds cost, per target × arch × node."""
        self.post_message(HistoryRequested())

    def action_show_runs(self) -> None:
        """`u`: fleet runs, drawn and compared."""
        self.post_message(RunsRequested())

    def action_new_run(self) -> None:
        """`R`: the new-run dialog; the run then shows on the Runs screen (`u`)."""
        self.post_message(NewRunRequested())

    def action_refresh(self) -> None:
        """Probe and re-read now."""
        self.poke()
