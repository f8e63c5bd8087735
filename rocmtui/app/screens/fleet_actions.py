"""The fleet screen's job and bake actions: bake, rebuild, open a log, cancel after asking.

`FleetActions` is a mixin for `FleetScreen`: the key bindings in `rocmtui.app.keys` name
actions, and Textual looks them up as `action_<name>` on the screen, so the methods keep their
names and simply live here. The screen keeps the state (`data`, `feeds`) and the message
handlers; these methods read that state and start dialogs or core workers.

Dialogs are imported inside the methods that open them, never at the top: nothing here may
delay the first frame.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import work

from rocmtui.app.feeds import describe
from rocmtui.app.messages import CancelRequested, JobStarted, LogRequested
from rocmtui.app.model import BakePlan, JobView, last_job_on, running_job_on
from rocmtui.app.text import clean
from rocmtui.app.userthreads import run_on_own_thread
from rocmtui.app.widgets.fleet import JobsPanel, NodesPanel

if TYPE_CHECKING:  # dialogs are imported when first opened, not before the first frame
    from textual.screen import Screen

    from rocmtui.app.app import RocmTui
    from rocmtui.app.dialogs.bake_choices import BakeRequest
    from rocmtui.app.feeds import Feeds
    from rocmtui.app.model import ConsoleData

    # type-checked as a screen; at run time a plain mixin, so Textual's DOM (CSS type names,
    # bindings, message handlers) sees only FleetScreen
    _Base = Screen[None]
else:
    _Base = object


class FleetActions(_Base):
    """Job and bake actions for `FleetScreen` (which provides the state declared here)."""

    # provided by FleetScreen; declared so these methods type-check on their own
    data: ConsoleData
    feeds: Feeds | None
    _pending_bake: BakeRequest | None

    if TYPE_CHECKING:

        @property
        def console(self) -> RocmTui:
            """The app, typed (CatalogScreen's property)."""

        def load_bake(self) -> None:
            """Read the bake file in a worker, once (FleetScreen's method)."""

    def focused_row(self) -> tuple[str | None, JobView | None, str]:
        """(node, job, why) for the row under the cursor of the focused panel only: a job row
        names both; a node row names its node and its running (else last) job. `why` says
        what is missing when the focused panel has no such row."""
        focused = self.focused
        jobs = self.query_one("#jobs", JobsPanel)
        nodes = self.query_one("#nodes", NodesPanel)
        if focused is jobs.table:
            job = next((j for j in self.data.jobs if j.id == jobs.selected_key), None)
            return (job.node if job else None), job, "No job in the Jobs panel yet."
        if focused is nodes.table and nodes.selected_key is not None:
            node = nodes.selected_key
            job = running_job_on(node, self.data.jobs) or last_job_on(node, self.data.jobs)
            return node, job, f"No job on {clean(node, 30)} yet."
        return None, None, "Select a job (Jobs panel) or a node first: Tab moves between panels."

    def action_bake(self) -> None:
        """`b`: the bake dialog, on the focused row's node."""
        node, _, _ = self.focused_row()
        from rocmtui.app.dialogs.bake_choices import BakeRequest

        self.open_bake(BakeRequest(node=node))

    def action_rebuild(self) -> None:
        """`r`: exactly what the focused row's job built, on its node: the dialog opens ready,
        Enter starts it."""
        _, job, why = self.focused_row()
        if job is None:
            self.notify(f"{why} (b starts a new build)", severity="information", markup=False)
            return
        from rocmtui.app.dialogs.bake_choices import rebuild_request

        self.open_bake(rebuild_request(job))

    def open_bake(self, request: BakeRequest) -> None:
        """Push the bake dialog (refused in read-only mode)."""
        if self.console.read_only:
            self.notify("Read-only console: builds cannot be started here.", severity="warning")
            return
        if self.data.bake is None and self.feeds is not None:
            # the file is read lazily after start-up: read it now, open the dialog when it is in
            self._pending_bake = request
            self.load_bake()
            return
        if self.data.bake is None or not self.data.bake.targets:
            why = self.data.bake.error if self.data.bake else "the bake file is still loading"
            self.notify(f"No bake targets: {why}", severity="warning", markup=False)
            return
        if request.ready and request.target not in self.data.bake.targets:
            # never another target in its place: Enter would build something else
            self.notify(
                f"Cannot rebuild {clean(request.target or '?', 40)}: the bake file "
                f"{clean(self.data.bake.path.name, 40)} no longer has that name.",
                severity="warning",
                markup=False,
            )
            return

        def chosen(plan: BakePlan | None) -> None:
            if plan is not None:
                self.launch(plan)

        from rocmtui.app.dialogs.bake import BakeDialog

        self.app.push_screen(BakeDialog(self.data, request), chosen)

    def action_open_log(self) -> None:
        """`l`: the log pane of the focused row's job (a node's running, else last, job)."""
        _, job, why = self.focused_row()
        if job is None:
            self.notify(why, severity="information", markup=False)
            return
        self.post_message(LogRequested(job.id))

    def action_cancel_job(self) -> None:
        """`c`: cancel the focused row's running job, after a confirmation."""
        _, job, why = self.focused_row()
        if job is None or not job.active:
            said = why if job is None else f"{clean(job.target, 40)} is not running ({job.state})."
            self.notify(said, severity="information", markup=False)
            return
        self.confirm_cancel(job)

    def confirm_cancel(self, job: JobView) -> None:
        """Ask, then cancel through the core."""

        def answered(yes: bool | None) -> None:
            if yes:
                self.post_message(CancelRequested(job.id))

        text = (
            f"Cancel {clean(job.target)} {clean(job.arch or '')} on {clean(job.node)} "
            f"({clean(job.id)})?"
        )
        from rocmtui.app.dialogs.confirm import ConfirmDialog

        self.app.push_screen(ConfirmDialog(text, "y", "Cancel the build"), answered)

    @work(name="launch", group="actions", exit_on_error=False)
    async def launch(self, plan: BakePlan) -> None:
        """Start a build through the core, on a thread of its own: never queued behind the
        views' workers (see rocmtui.app.userthreads)."""
        backend = self.console.backend
        try:
            # a pushing plan comes out of the dialog only after its explicit question
            job = await run_on_own_thread(
                lambda: backend.launch(plan, push_confirmed=plan.push), name="launch"
            )
        except Exception as exc:
            self.notify(describe(exc), title="Bake refused", severity="error", markup=False)
            return
        self.post_message(JobStarted(job))

    @work(name="cancel", group="actions", exit_on_error=False)
    async def cancel(self, job_id: str) -> None:
        """Cancel through the core (it waits out the grace period) on a thread of its own."""
        backend = self.console.backend
        try:
            await run_on_own_thread(lambda: backend.cancel(job_id), name="cancel")
        except Exception as exc:
            self.notify(describe(exc), title="Cancel failed", severity="error", markup=False)
            return
        self.notify(f"Job {clean(job_id)} cancelled.", markup=False)
        if self.feeds is not None:
            self.feeds.poke()
