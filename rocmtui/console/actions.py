"""The flows the App's intent handlers start: a bake request becomes a dialog (or waits for
the bake file), the dialog's plan a launch through the core and the started job its log pane;
a cancel or a prune a question and then the core's call; a run again a question and a run.

Each flow calls its next step itself (the dialog's answer goes straight to `launch`, the
launched job straight to `started` and on to the log pane), never back up through the App. The
App has one handler per intent (`rocmtui.console.intents`) and hands the flows here only what
they use: Textual's side (screens, workers, notifications), the backend, the fleet screen, and
how to show a job's log pane. The screens it shows are the App's; none of them knows another.

Dialogs are imported when first opened, never at the top: nothing here may delay the first
frame. The core's blocking calls run on threads of their own (`userthreads`), never behind
the views' workers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rocmtui.console import prefs
from rocmtui.console.backend.names import bake_file_names as bake_named
from rocmtui.console.backend.refresh import failure_text
from rocmtui.console.backend.userthreads import run_on_own_thread
from rocmtui.console.backend.views import BakePlan, BakeRequest, JobView, keep_running
from rocmtui.console.outside_text import clean
from rocmtui.console.prefs import PaneLayout

if TYPE_CHECKING:
    from textual.app import App

    from rocmtui.console.backend.access import FleetBackend
    from rocmtui.console.dialogs.bake import BakeDialog
    from rocmtui.console.screens.fleet import FleetScreen
    from rocmtui.core.config.fleetfile import FleetConfig


@dataclass(frozen=True)
class Console:
    """What the flows read of the console they run in: fixed for its life, given by the App."""

    config: FleetConfig
    keymap: dict[str, str]
    read_only: bool
    live: bool  # False: tests feed recorded snapshots, the bake file is not read here
    remember: bool  # the per-user prefs file is written


class ConsoleActions:
    """Carries out the flows the App's intent handlers start (see the module doc)."""

    def __init__(
        self,
        app: App[Any],
        console: Console,
        backend: FleetBackend,
        fleet_screen: FleetScreen,
        *,
        show_log: Callable[[str], None],
    ) -> None:
        self.app = app  # Textual's side: screens, workers, notifications
        self.console = console
        self.backend = backend
        self.fleet_screen = fleet_screen
        self.show_log = show_log  # a started job's log pane, brought forward
        self._waiting: BakeRequest | None = None  # asked for before the bake file was read
        self._dialog_open = False  # a bake dialog is on the stack (one at a time)

    def remember_layout(self, layout: PaneLayout) -> None:
        """Keep the log panes' layout in the per-user prefs file (on a thread: it writes)."""
        app = self.app
        if self.console.remember:

            def save() -> None:
                said = prefs.save(**layout.as_prefs())
                if said:  # the layout holds for this run only: say so
                    app.call_from_thread(app.notify, said, severity="warning", markup=False)

            app.run_worker(save, name="save-layout", thread=True, exit_on_error=False)

    # ---------------------------------------------------------------- bake

    def bake_dialog(self, request: BakeRequest) -> BakeDialog | None:
        """The bake dialog for `request`, for the App to show (its answer goes to
        `bake_chosen`); None when there is none to show, said (read-only, no such target) or
        not: one dialog at a time, and a request while one is open, or while the bake file is
        still being read for an earlier one, adds nothing."""
        app = self.app
        if self.console.read_only:
            app.notify("Read-only console: builds cannot be started here.", severity="warning")
            return None
        if self._dialog_open:
            return None
        fleet = self.fleet_screen
        data = fleet.data
        if data.bake is None and self.console.live:
            # the file is read lazily after start-up: read it now, open the dialog when it is in
            self._waiting = request
            fleet.load_bake()
            return None
        if data.bake is None or not data.bake.targets:
            why = data.bake.error if data.bake else "the bake file is still loading"
            app.notify(f"No bake targets: {why}", severity="warning", markup=False)
            return None
        if request.ready and request.target not in data.bake.targets:
            # never another target in its place: Enter would build something else
            app.notify(
                f"Cannot rebuild {clean(request.target or '?', 40)}: the bake file "
                f"{clean(bake_named(data.bake.path), 60)} no longer has that name.",
                severity="warning",
                markup=False,
            )
            return None
        # on first use: kept off the console's start
        from rocmtui.console.dialogs.bake import BakeDialog

        self._dialog_open = True
        backend = self.backend
        return BakeDialog(
            data, request, self.console.config, backend.plan, self.console.keymap,
            place_for=lambda target, arch, original, overrides: backend.placement(
                target, arch, original, data.fleet, overrides
            ),
        )  # fmt: skip

    def bake_chosen(self, plan: BakePlan | None) -> None:
        """The dialog closed: its plan (if Start was pressed) is launched now."""
        self._dialog_open = False
        if plan is not None:
            self.launch(plan)

    def waiting_request(self) -> BakeRequest | None:
        """The bake file is in: the request that waited for it (its dialog opens now)."""
        request, self._waiting = self._waiting, None
        return request

    def launch(self, plan: BakePlan) -> None:
        """Start the plan through the core, on a thread of its own: never queued behind the
        views' workers (see rocmtui.console.backend.userthreads); then `started`."""
        backend = self.backend

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
            self.started(job)

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
        self.fleet_screen.show_started(job)
        self.show_log(record.id)

    # ---------------------------------------------------------------- cancel

    def confirm_cancel(self, job: JobView) -> None:
        """Ask; a yes cancels it (`cancel`). A build started elsewhere is not
        asked about: only its own client can cancel it, and the console says so."""
        # on first use: kept off the console's start
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
                self.cancel(job.record.id)

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
        backend = self.backend

        async def run() -> None:
            try:
                await run_on_own_thread(lambda: backend.cancel(job_id), name="cancel")
            except Exception as exc:
                self.app.notify(
                    failure_text(exc), title="Cancel failed", severity="error", markup=False
                )
                return
            self.app.notify(f"Job {clean(job_id)} cancelled.", markup=False)
            self.fleet_screen.poke()

        self.app.run_worker(run(), name="cancel", group="actions", exit_on_error=False)

    # ---------------------------------------------------------------- prune

    def confirm_prune(self, node: str) -> None:
        """Ask the node's engine what a prune would remove (a thread), then ask the operator;
        a yes prunes it (`prune`)."""
        # on first use: kept off the console's start
        from rocmtui.console.dialogs.confirm import ConfirmDialog

        backend = self.backend

        def answered(yes: bool | None) -> None:
            if yes:
                self.prune(node)

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
        backend = self.backend

        async def run() -> None:
            try:
                said = await run_on_own_thread(lambda: backend.prune(node), name="prune")
            except Exception as exc:
                self.app.notify(
                    failure_text(exc), title="Prune refused", severity="error", markup=False
                )
                return
            self.app.notify(clean(said, 200), title="Prune", markup=False)
            self.fleet_screen.poke()

        self.app.run_worker(run(), name="prune", group="actions", exit_on_error=False)

    # ---------------------------------------------------------------- quit

    def still_running(self) -> list[JobView]:
        """Builds that keep running after the console quits (they never belonged to it)."""
        return keep_running(self.fleet_screen.data.jobs)
