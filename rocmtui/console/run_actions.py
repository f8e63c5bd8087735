"""Fleet runs started from the console: asked first, then launched through the core on a
thread of its own; what started where is said in a toast and the Runs screen reads again.

The App's handlers of the run intents start these; given only what they use (see
`rocmtui.console.actions`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rocmtui.console.backend.refresh import failure_text
from rocmtui.console.backend.userthreads import run_on_own_thread
from rocmtui.console.intents import RunAgainRequested
from rocmtui.console.outside_text import clean

if TYPE_CHECKING:
    from textual.app import App

    from rocmtui.console.actions import Console
    from rocmtui.console.backend.access import FleetBackend
    from rocmtui.console.dialogs.newrun import RunChoice
    from rocmtui.console.screens.fleet import FleetScreen


class RunStarter:
    """Starts fleet runs for the App that holds it (see the module doc)."""

    def __init__(
        self,
        app: App[Any],
        console: Console,
        backend: FleetBackend,
        fleet_screen: FleetScreen,
        runs_changed: Callable[[], None],
    ) -> None:
        self.app = app  # Textual's side: screens, workers, notifications
        self.console = console
        self.backend = backend
        self.fleet_screen = fleet_screen
        self.runs_changed = runs_changed  # the Runs screen reads again
        self._waiting = False  # `R` came before the bake file was read
        self._open = False  # a new-run dialog is on the stack (one at a time)

    def run_again(self, intent: RunAgainRequested) -> None:
        """Ask, then start the run again (`r` on the Runs screen)."""
        sets = " ".join(f"{k}={v}" for k, v in sorted(intent.overrides.items()))
        self.ask_and_start(
            intent.target, intent.nodes, intent.overrides, False,
            f"Run {clean(intent.target, 40)} again on {clean(', '.join(intent.nodes), 120)}?",
            f"each node at its own arch; {sets or 'no --set'}",
        )  # fmt: skip

    def new_run(self) -> None:
        """`R`: the new-run dialog (refused read-only; after the bake file, when it is being
        read), then the question, then the run."""
        # on first use: kept off the console's start
        from rocmtui.console.dialogs.newrun import NewRunDialog

        app, console = self.app, self.console
        if console.read_only:
            app.notify("Read-only console: runs cannot be started here.", severity="warning")
            return
        if self._open:
            return
        fleet = self.fleet_screen
        data = fleet.data
        if data.bake is None and console.live:
            self._waiting = True
            fleet.load_bake()
            return
        if data.bake is None or not data.bake.targets:
            why = data.bake.error if data.bake else "the bake file is still loading"
            app.notify(f"No bake targets: {clean(why or '?', 200)}", severity="warning",
                       markup=False)  # fmt: skip
            return
        self._open = True
        dialog = NewRunDialog(data.bake, console.config, data.fleet, console.keymap)
        app.push_screen(dialog, self._chosen)

    def bake_file_read(self) -> None:
        """The bake file is in: open the dialog `R` asked for while it was being read."""
        if self._waiting:
            self._waiting = False
            self.new_run()

    def _chosen(self, choice: RunChoice | None) -> None:
        self._open = False
        if choice is None:
            return
        sets = " ".join(f"{k}={v}" for k, v in sorted(choice.overrides.items()))
        where = ", ".join(f"{n} {a}" for n, a in choice.arches.items())
        pushes = "; PUSHES its images" if choice.push else ""
        self.ask_and_start(
            choice.target, choice.nodes, choice.overrides, choice.push,
            f"Start a run of {clean(choice.target, 40)} on {len(choice.nodes)} node(s)?",
            f"{where}; {sets or 'no --set'}{pushes}",
        )  # fmt: skip

    def ask_and_start(
        self,
        target: str,
        nodes: tuple[str, ...],
        overrides: dict[str, str],
        push: bool,
        question: str,
        details: str,
    ) -> None:
        """Ask; on yes start the run on a thread of its own (the core refuses it read-only)
        and say where it started and where not; the Runs screen reads again."""
        # on first use: kept off the console's start
        from rocmtui.console.dialogs.confirm import ConfirmDialog

        backend, fleet = self.backend, self.fleet_screen.data.fleet

        async def start() -> None:
            try:
                said = await run_on_own_thread(
                    lambda: backend.launch_run(target, nodes, overrides, fleet, push), name="run"
                )
            except Exception as exc:
                self.app.notify(failure_text(exc), title="Run refused", severity="error",
                                markup=False)  # fmt: skip
                return
            self.app.notify(clean(said, 300), title="Run started", markup=False)
            self.runs_changed()  # read again (not a test's recorded runs)

        def answered(yes: bool | None) -> None:
            if yes:
                self.app.run_worker(start(), name="run-start", group="run", exit_on_error=False)

        self.app.push_screen(
            ConfirmDialog(question, "Start the run", keymap=self.console.keymap,
                          details=clean(details, 300)),
            answered,
        )  # fmt: skip
