"""What the fleet screen's keys are about: the row under the cursor, and the intent each key
makes of it.

A key on the fleet screen acts on the focused panel's row: a job row names its job and node, a
node row its node and that node's running (else last) job. Which row that is, and what `b`,
`r`, `l`, `t`, `c` and `p` ask for on it is decided here: an intent
(`rocmtui.console.intents`), or a `Notice` saying why there is none. The screen keeps the
actions Textual's bindings call and posts (or says) what each method here answers: the
intent goes up from the screen itself, one hop to the App (tests/pilot/test_key_hops.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from textual.notifications import SeverityLevel
from textual.screen import Screen

from rocmtui.console.backend.views import (
    BakeRequest,
    ConsoleData,
    JobView,
    last_job_on,
    running_job_on,
)
from rocmtui.console.intents import (
    BakeRequested,
    CancelRequested,
    LogRequested,
    PruneRequested,
    RebuildRequested,
    TimelineRequested,
)
from rocmtui.console.outside_text import clean
from rocmtui.console.panelmount import FleetPanels
from rocmtui.core.states import JobState


@dataclass(frozen=True)
class Notice:
    """What a row key says instead of asking for anything (the row has no such job or node)."""

    text: str
    severity: SeverityLevel = "information"


class RowIntents:
    """The fleet screen's row keys: the focused row, and the intent each key makes of it."""

    def __init__(
        self, screen: Screen[None], panels: FleetPanels, data: Callable[[], ConsoleData]
    ) -> None:
        """`data`: the screen's latest `ConsoleData` (replaced, never changed, on each report)."""
        self._screen = screen
        self._panels = panels
        self._data = data

    def focused_row(self) -> tuple[str | None, JobView | None, str]:
        """(node, job, why) for the row under the cursor of the focused panel only: a job row
        names both; a node row names its node and its running (else last) job. `why` says
        what is missing when the focused panel has no such row."""
        jobs, nodes = self._panels.get("jobs"), self._panels.nodes
        if jobs is not None and self._screen.focused is jobs.table:
            job = next((j for j in self._data().jobs if j.record.id == jobs.selected_key), None)
            return (job.record.node if job else None), job, "No job in the Jobs panel yet."
        if self._screen.focused is nodes.table and nodes.selected_key is not None:
            node = nodes.selected_key
            job = running_job_on(node, self._data().jobs) or last_job_on(node, self._data().jobs)
            return node, job, f"No job on {clean(node, 30)} yet."
        return None, None, "Select a job (Jobs panel) or a node first: Tab moves between panels."

    def bake(self) -> BakeRequested:
        """`b`: the bake dialog, on the focused row's node."""
        node, _, _ = self.focused_row()
        return BakeRequested(BakeRequest(node=node))

    def rebuild(self) -> RebuildRequested | Notice:
        """`r`: exactly what the focused row's job built, on its node: the dialog opens ready,
        Enter starts it."""
        _, job, why = self.focused_row()
        if job is None:
            return Notice(f"{why} (b starts a new build)")
        if job.record.state == JobState.STALLED:  # its node needs a person: another one
            elsewhere = BakeRequest.elsewhere(job, self._data().fleet)
            if elsewhere is not None:
                return RebuildRequested(elsewhere)
        return RebuildRequested(BakeRequest.rebuild(job))

    def open_log(self) -> LogRequested | Notice:
        """`l`: the log pane of the focused row's job (a node's running, else last, job)."""
        _, job, why = self.focused_row()
        if job is None:
            return Notice(why)
        return LogRequested(job.record.id)

    def show_timeline(self) -> TimelineRequested | Notice:
        """`t`: the focused row's job's steps on a time axis."""
        _, job, why = self.focused_row()
        if job is None:
            return Notice(why)
        return TimelineRequested(job.record.id)

    def cancel_job(self) -> CancelRequested | Notice:
        """`c`: cancel the focused row's running job, after a confirmation."""
        _, job, why = self.focused_row()
        if job is None or not job.active:
            said = (
                why
                if job is None
                else f"{clean(job.record.target, 40)} is not running ({job.record.state})."
            )
            return Notice(said)
        if job.record.outside is not None:  # no question that could only end in a refusal
            return Notice(clean(job.record.outside.cancel_refusal(), 300), "warning")
        return CancelRequested(job)

    def prune(self) -> PruneRequested | Notice:
        """`p`: the focused row's node's build cache, shown, then pruned once confirmed."""
        node, _, why = self.focused_row()
        if node is None:
            return Notice(why)
        return PruneRequested(node)
