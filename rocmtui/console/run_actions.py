"""Fleet runs started from the console: asked first, then launched through the core on a
thread of its own; what started where is said in a toast and the Runs screen reads again.

Held by `ConsoleActions` (the one owner of intents), which hands it the run intents.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from rocmtui.console.backend.refresh import failure_text
from rocmtui.console.backend.userthreads import run_on_own_thread
from rocmtui.console.intents import RunAgainRequested
from rocmtui.console.outside_text import clean

if TYPE_CHECKING:
    from textual.app import App

    from rocmtui.console.backend.access import FleetBackend
    from rocmtui.console.screens.fleet import FleetScreen
    from rocmtui.console.screens.runs import RunsScreen


class RunState(Protocol):
    """What starting a run reads of the App (declared here: this module never imports it)."""

    keymap: dict[str, str]
    backend: FleetBackend
    fleet_screen: FleetScreen

    @property
    def runs_screen(self) -> RunsScreen: ...


class RunStarter:
    """Starts fleet runs for the App that holds it (see the module doc)."""

    def __init__(self, app: App[Any], console: RunState) -> None:
        self.app = app
        self.console = console

    def run_again(self, intent: RunAgainRequested) -> None:
        """Ask, then start the run on a thread of its own (the core refuses it read-only)
        and say where it started and where not; the Runs screen reads again."""
        from rocmtui.console.dialogs.confirm import ConfirmDialog

        backend, fleet = self.console.backend, self.console.fleet_screen.data.fleet
        target, nodes, overrides = intent.target, intent.nodes, intent.overrides

        async def start() -> None:
            try:
                said = await run_on_own_thread(
                    lambda: backend.launch_run(target, nodes, overrides, fleet), name="run"
                )
            except Exception as exc:
                self.app.notify(failure_text(exc), title="Run refused", severity="error",
                                markup=False)  # fmt: skip
                return
            self.app.notify(clean(said, 300), title="Run started", markup=False)
            self.console.runs_screen.action_refresh()  # read again (not a test's recorded runs)

        def answered(yes: bool | None) -> None:
            if yes:
                self.app.run_worker(start(), name="run-again", group="run", exit_on_error=False)

        sets = " ".join(f"{k}={v}" for k, v in sorted(overrides.items()))
        text = f"Run {clean(target, 40)} again on {clean(', '.join(nodes), 120)}?"
        self.app.push_screen(
            ConfirmDialog(text, "Start the run", keymap=self.console.keymap,
                          details=clean(f"each node at its own arch; {sets or 'no --set'}", 200)),
            answered,
        )  # fmt: skip
