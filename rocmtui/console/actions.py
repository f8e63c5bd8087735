"""The one owner of the operator's intents: every screen and dialog sends them up, this carries
them out (`rocmtui.console.intents` lists them).

The App holds one `ConsoleActions` and hands it every `Intent` that reaches it. Here a bake
request becomes a dialog (or waits for the bake file), a resolved plan a launch through the
core, a cancel a question and then the core's cancel, a job id a log pane. The screens it
shows are the App's; none of them knows another.

Dialogs are imported when first opened, never at the top: nothing here may delay the first
frame. The core's blocking calls run on threads of their own (`userthreads`), never behind
the views' workers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from rocmtui.console.backend.refresh import failure_text
from rocmtui.console.backend.userthreads import run_on_own_thread
from rocmtui.console.backend.views import BakePlan, BakeRequest, JobView, keep_running
from rocmtui.console.intents import (
    BakeRequested,
    CancelConfirmed,
    CancelRequested,
    HistoryRequested,
    Intent,
    JobsChanged,
    LaunchRequested,
    LayoutChanged,
    LogRequested,
    LogsRequested,
    NewRunRequested,
    PanesChanged,
    PruneConfirmed,
    PruneRequested,
    PublishedRequested,
    RebuildRequested,
    RunAgainRequested,
    RunsRequested,
    TimelineRequested,
)
from rocmtui.console.messages import JobStarted
from rocmtui.console.outside_text import clean
from rocmtui.console.prefs import PaneLayout
from rocmtui.console.run_actions import RunStarter
from rocmtui.core.bake.find import bake_file_names as bake_named

if TYPE_CHECKING:
    from textual.app import App
    from textual.screen import Screen

    from rocmtui.console.backend.access import FleetBackend
    from rocmtui.console.screens.fleet import FleetScreen
    from rocmtui.console.screens.history import HistoryScreen
    from rocmtui.console.screens.logs import LogsScreen
    from rocmtui.console.screens.published import PublishedScreen
    from rocmtui.console.screens.runs import RunsScreen
    from rocmtui.core.config.fleetfile import FleetConfig


class ConsoleState(Protocol):
    """What the owner of intents reads of the App that holds it, declared here so that this
    module never imports the App (the App imports it)."""

    read_only: bool
    live: bool
    remember: bool
    config: FleetConfig
    keymap: dict[str, str]
    backend: FleetBackend
    fleet_screen: FleetScreen

    @property
    def logs_screen(self) -> LogsScreen: ...
    @property
    def open_logs_screen(self) -> LogsScreen | None: ...
    @property
    def open_published_screen(self) -> PublishedScreen | None: ...
    @property
    def published_screen(self) -> PublishedScreen: ...
    @property
    def history_screen(self) -> HistoryScreen: ...
    def timeline_screen(self, job_id: str, title: str, running: bool) -> Screen[None]: ...
    @property
    def runs_screen(self) -> RunsScreen: ...


class ConsoleActions:
    """Carries out intents for the App that holds it (see the module doc)."""

    def __init__(self, app: App[Any], console: ConsoleState) -> None:
        self.app = app  # Textual's side: screens, workers, notifications, messages
        self.console = console  # the same App, as the state this owner reads
        self._waiting: BakeRequest | None = None  # asked for before the bake file was read
        self._dialog_open = False  # a bake dialog is on the stack (one at a time)
        self.runs = RunStarter(app, console)  # fleet runs: started, asked first

    def carry_out(self, intent: Intent) -> None:
        """Do what `intent` asks (the App's one handler of intents calls this)."""
        if isinstance(intent, BakeRequested | RebuildRequested):
            self.open_bake(intent.request)
        elif isinstance(intent, LaunchRequested):
            self.launch(intent.plan)
        elif isinstance(intent, CancelRequested):
            self.confirm_cancel(intent.job)
        elif isinstance(intent, CancelConfirmed):
            self.cancel(intent.job_id)
        elif isinstance(intent, PruneRequested):
            self.confirm_prune(intent.node)
        elif isinstance(intent, PruneConfirmed):
            self.prune(intent.node)
        elif isinstance(intent, LogRequested):
            self.open_log(intent.job_id, intent.at)
        elif isinstance(intent, TimelineRequested):
            self.open_timeline(intent.job_id)
        elif isinstance(intent, LogsRequested):
            self.app.push_screen(self.console.logs_screen)
        elif isinstance(intent, PublishedRequested):
            self.app.push_screen(self.console.published_screen)
        elif isinstance(intent, HistoryRequested):
            self.app.push_screen(self.console.history_screen)
        elif isinstance(intent, RunsRequested):
            self.app.push_screen(self.console.runs_screen)
        elif isinstance(intent, RunAgainRequested):
            self.runs.run_again(intent)
        elif isinstance(intent, NewRunRequested):
            self.runs.new_run()
        elif isinstance(intent, JobsChanged):
            self.jobs_changed(intent.jobs, intent.pushes_ended)
        elif isinstance(intent, LayoutChanged):
            self.remember_layout(intent.layout)
        elif isinstance(intent, PanesChanged):
            self.console.backend.watch_progress(intent.job_ids)
            self.console.fleet_screen.poke_jobs()  # a new pane's progress comes from a round now

    def remember_layout(self, layout: PaneLayout) -> None:
        """Keep the log panes' layout in the per-user prefs file (on a thread: it writes)."""
        app = self.app
        if self.console.remember:
            from rocmtui.console import prefs

            def save() -> None:
                said = prefs.save(**layout.as_prefs())
                if said:  # the layout holds for this run only: say so
                    app.call_from_thread(app.notify, said, severity="warning", markup=False)

            app.run_worker(save, name="save-layout", thread=True, exit_on_error=False)

    # ---------------------------------------------------------------- bake

    def open_bake(self, request: BakeRequest) -> None:
        """The bake dialog for `request` (refused in read-only mode). One dialog at a time: a
        request while one is open, or while the bake file is still being read for an
        earlier one, adds nothing."""
        app = self.app
        if self.console.read_only:
            app.notify("Read-only console: builds cannot be started here.", severity="warning")
            return
        if self._dialog_open:
            return
        fleet = self.console.fleet_screen
        data = fleet.data
        if data.bake is None and self.console.live:
            # the file is read lazily after start-up: read it now, open the dialog when it is in
            self._waiting = request
            fleet.load_bake()
            return
        if data.bake is None or not data.bake.targets:
            why = data.bake.error if data.bake else "the bake file is still loading"
            app.notify(f"No bake targets: {why}", severity="warning", markup=False)
            return
        if request.ready and request.target not in data.bake.targets:
            # never another target in its place: Enter would build something else
            app.notify(
                f"Cannot rebuild {clean(request.target or '?', 40)}: the bake file "
                f"{clean(bake_named(data.bake.path), 60)} no longer has that name.",
                severity="warning",
                markup=False,
            )
            return
        from rocmtui.console.dialogs.bake import BakeDialog

        self._dialog_open = True
        backend = self.console.backend
        dialog = BakeDialog(
            data, request, self.console.config, backend.plan, self.console.keymap,
            place_for=lambda target, arch, original, overrides: backend.placement(
                target, arch, original, data.fleet, overrides
            ),
        )  # fmt: skip
        app.push_screen(dialog, self._dialog_closed)

    def _dialog_closed(self, plan: BakePlan | None) -> None:
        self._dialog_open = False
        if plan is not None:
            self.app.post_message(LaunchRequested(plan))

    def bake_file_read(self) -> None:
        """The bake file is in: open the dialog asked for while it was being read."""
        request, self._waiting = self._waiting, None
        self.runs.bake_file_read()
        if request is not None:
            self.open_bake(request)

    def launch(self, plan: BakePlan) -> None:
        """Start the plan through the core, on a thread of its own: never queued behind the
        views' workers (see rocmtui.console.backend.userthreads)."""
        backend = self.console.backend

        async def run() -> None:
            try:
                # a pushing plan, or one granted a privilege that changes the node, comes out
                # of the dialog only after its explicit question
                loud = any(p.loud and p.grant in plan.granted for p in plan.privileges)
                job = await run_on_own_thread(
                    lambda: backend.launch(plan, push_confirmed=plan.push or loud), name="launch"
                )
            except Exception as exc:
                self.app.notify(
                    failure_text(exc), title="Bake refused", severity="error", markup=False
                )
                return
            self.app.post_message(JobStarted(job))

        self.app.run_worker(run(), name="launch", group="actions", exit_on_error=False)

    def started(self, job: JobView) -> None:
        """A launch went through: say so, show its row at once and open its log pane."""
        record = job.record
        self.app.notify(
            f"{clean(record.target)} {clean(record.arch or '')} on {clean(record.node)}: "
            f"job {clean(record.id)}",
            title="Build started",
            markup=False,
        )
        self.console.fleet_screen.show_started(job)
        self.app.post_message(LogRequested(job.record.id))

    # ---------------------------------------------------------------- cancel

    def confirm_cancel(self, job: JobView) -> None:
        """Ask; a yes comes back as `CancelConfirmed`. A build started elsewhere is not
        asked about: only its own client can cancel it, and the console says so."""
        from rocmtui.console.dialogs.confirm import ConfirmDialog

        if job.record.outside is not None:
            self.app.notify(
                clean(job.record.outside.cancel_refusal(), 300),
                title="Not rocmtui's build",
                severity="warning",
                markup=False,
            )
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.app.post_message(CancelConfirmed(job.record.id))

        record = job.record
        text = (
            f"Cancel {clean(record.target)} {clean(record.arch or '')} on {clean(record.node)} "
            f"({clean(record.id)})?"
        )
        self.app.push_screen(
            ConfirmDialog(text, "Cancel the build", keymap=self.console.keymap), answered
        )

    def cancel(self, job_id: str) -> None:
        """Cancel through the core (it waits out the grace period) on a thread of its own."""
        backend = self.console.backend

        async def run() -> None:
            try:
                await run_on_own_thread(lambda: backend.cancel(job_id), name="cancel")
            except Exception as exc:
                self.app.notify(
                    failure_text(exc), title="Cancel failed", severity="error", markup=False
                )
                return
            self.app.notify(f"Job {clean(job_id)} cancelled.", markup=False)
            self.console.fleet_screen.poke()

        self.app.run_worker(run(), name="cancel", group="actions", exit_on_error=False)

    # ---------------------------------------------------------------- prune

    def confirm_prune(self, node: str) -> None:
        """Ask the node's engine what a prune would remove (a thread), then ask the operator;
        a yes comes back as `PruneConfirmed`."""
        from rocmtui.console.dialogs.confirm import ConfirmDialog

        backend = self.console.backend

        def answered(yes: bool | None) -> None:
            if yes:
                self.app.post_message(PruneConfirmed(node))

        async def run() -> None:
            try:
                preview = await run_on_own_thread(
                    lambda: backend.prune_preview(node), name="prune-plan", daemon=True
                )
            except Exception as exc:
                self.app.notify(failure_text(exc), title="Prune", severity="error", markup=False)
                return
            if not preview.records:
                said = clean(preview.lines[0], 300)
                self.app.notify(said, title="Nothing to prune", markup=False)
                return
            question = f"Prune the build cache of {clean(node)}?"
            details = "\n".join(clean(line, 120) for line in preview.lines)
            dialog = ConfirmDialog(question, "Prune", keymap=self.console.keymap, details=details)
            self.app.push_screen(dialog, answered)

        self.app.run_worker(run(), name="prune-plan", group="actions", exit_on_error=False)

    def prune(self, node: str) -> None:
        """Prune through the core (refused read-only or while a build runs there)."""
        backend = self.console.backend

        async def run() -> None:
            try:
                said = await run_on_own_thread(lambda: backend.prune(node), name="prune")
            except Exception as exc:
                self.app.notify(
                    failure_text(exc), title="Prune refused", severity="error", markup=False
                )
                return
            self.app.notify(clean(said, 200), title="Prune", markup=False)
            self.console.fleet_screen.poke()

        self.app.run_worker(run(), name="prune", group="actions", exit_on_error=False)

    # ---------------------------------------------------------------- logs and jobs

    def open_log(self, job_id: str, at: str | None = None) -> None:
        """The job's pane among the log panes, brought forward, on show (at the first line of
        step `at`, a step's name, when given)."""
        job = next((j for j in self.console.fleet_screen.data.jobs if j.record.id == job_id), None)
        if job is None:
            self.app.notify("That job is not in the job store (yet).", severity="warning")
            return
        logs = self.console.logs_screen
        logs.open_job(job, at=at)
        if self.app.screen is not logs:
            self.app.push_screen(logs)

    def open_timeline(self, job_id: str) -> None:
        """The job's steps on a time axis: a timeline screen of its own on top."""
        job = next((j for j in self.console.fleet_screen.data.jobs if j.record.id == job_id), None)
        record = job.record if job is not None else None
        title = f"{record.target} {record.arch or '-'} on {record.node}" if record else job_id
        running = record is not None and record.ended_at is None
        self.app.push_screen(self.console.timeline_screen(job_id, title, running))

    def jobs_changed(self, jobs: tuple[JobView, ...], pushes_ended: bool) -> None:
        """Open panes take the new states and progress; a push that ended may have changed
        what the registry holds, so the published screen asks again."""
        logs = self.console.open_logs_screen
        if logs is not None:
            logs.update_jobs(jobs)
        published = self.console.open_published_screen
        if published is not None and pushes_ended:
            published.refresh_soon()

    # ---------------------------------------------------------------- quit

    def still_running(self) -> list[JobView]:
        """Builds that keep running after the console quits (they never belonged to it)."""
        return keep_running(self.console.fleet_screen.data.jobs)

    def stop(self) -> None:
        """The console is quitting: the loops end and a published round in flight is killed."""
        self.console.fleet_screen.stop_feeds()
        published = self.console.open_published_screen
        if published is not None:
            published.stop_feed()
