"""One job's log pane: a header with the job's state and progress, the BuildKit step outline
(collapsible) beside the log view.

The log view itself is `rocmtui.console.widgets.logview.LogView` (file-backed, bounded memory, its
own find/filter/follow/wrap keys).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from rich.style import Style
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Static, Tree

from rocmtui.console.backend.views import JobView, StepView, fmt_counter
from rocmtui.console.outside_text import clean
from rocmtui.console.prefs import PaneLayout
from rocmtui.console.widgets.common import Palette
from rocmtui.console.widgets.logview import LogView
from rocmtui.core.states import JOB_SYMBOLS, LOOP_SYMBOLS, JobState
from rocmtui.core.text.units import fmt_age, fmt_step_duration

STEP_SYMBOLS = {"done": "✓", "cached": "≡", "error": "✗", "canceled": "⊘", "running": "▶"}


def make_log_view(path: Path | None) -> LogView:
    """The pane's log view, following the file. Escape with nothing to clear falls through to
    the screen (LogView's own check_action), which goes back to the fleet."""
    return LogView(path, follow=True)


class StepOutline(Tree[StepView]):
    """BuildKit steps with status and duration; selecting one asks the log to jump there."""

    def __init__(self) -> None:
        super().__init__("steps", id="steps")
        self.show_root = False
        self._shown: tuple[StepView, ...] = ()

    def show_steps(self, steps: tuple[StepView, ...]) -> None:
        """Replace the outline when the steps changed (failed step first)."""
        if steps == self._shown:
            return
        self._shown = steps
        ordered = sorted(steps, key=lambda s: s.status != "error")
        self.clear()
        for step in ordered:
            label = Text(f"{STEP_SYMBOLS.get(step.status, '·')} ")
            label.append(clean(step.number, 8) + " ", style="dim")
            if step.duration is not None:  # before the name: names run past the outline's edge
                label.append(fmt_step_duration(step.duration) + " ", style="dim")
            label.append(clean(step.name, 80))
            self.root.add_leaf(label, data=step)


class LogPane(Vertical):
    """A job's header, steps and log."""

    def __init__(self, job: JobView, *, clock: Callable[[], float], id: str) -> None:
        super().__init__(id=id, classes="logpane")
        self.job = job
        self.clock = clock
        self.view = make_log_view(job.record.log_path)
        self.header = Static("", classes="logpane--header", markup=False)
        self.outline = StepOutline()

    def compose(self) -> ComposeResult:
        """Header above; steps beside the log."""
        yield self.header
        with Horizontal(classes="logpane--body"):
            yield self.outline
            yield self.view

    def on_mount(self) -> None:
        """First render; the log takes the keys (find, follow, wrap ... in the footer)."""
        self.update_job(self.job, now=self.clock())
        self.focus_log()

    def focus_log(self) -> None:
        """Give the keys to the log (its find/follow/wrap keys then show in the footer)."""
        target = getattr(self.view, "body", self.view)
        if target.focusable:
            target.focus()
        else:
            self.view.focus()

    def update_job(self, job: JobView, now: float | None) -> None:
        """New job state or progress from the job store."""
        self.job = job
        now = time.time() if now is None else now
        word = str(job.record.state)
        line = Text(no_wrap=True, overflow="ellipsis")
        # in the state's colour, as in the jobs panel: `✗ failed` red, `‼ stalled` alarmed
        look = Palette.from_app(self.app).for_state(word) + Style(bold=True)  # (a new theme too)
        # the gap after the word is in its run: SVG renderers drop a run's leading spaces
        line.append(f"{JOB_SYMBOLS.get(word, '?')} {word}  ", style=look)
        line.append(
            f"{clean(job.record.target)} {clean(job.record.arch or '')} on {clean(job.record.node)}"
        )
        line.append(f"  job {clean(job.record.id)}  {fmt_age(job.duration(now))}", style="dim")
        if job.record.exit_code is not None:
            line.append(f"  exit {job.record.exit_code}", style="dim")
        if job.record.digest and len(job.images) < 2:
            line.append("  " + clean(job.record.digest, 80)[:19], style="dim")
        if job.loop_text:  # the registry's word on the push, with both digests when they differ
            line.append(
                "  " + clean(job.loop_text, 120), style="bold" if job.loop != "in registry" else ""
            )
        if job.cache:
            line.append("  " + clean(job.cache, 80), style="dim")
        if len(job.images) > 1:  # a group job: each of its targets with its own digest
            for target, digest, loop in job.images:
                line.append(
                    f"\n  {clean(target, 40)} {clean(digest or 'no digest', 80)[:19]}", style="dim"
                )
                if loop:
                    line.append(f" {LOOP_SYMBOLS.get(loop, '?')} {clean(loop, 20)}", style="dim")
        line.append("\n")  # next line: where the build is now
        progress = job.progress
        if progress is not None:
            counter = fmt_counter(progress, running=job.active)
            if counter:
                line.append(counter + "  ", style="bold")
            if progress.last_output_at is not None and job.active:
                silent = now - progress.last_output_at
                style = "bold reverse" if job.record.state == JobState.STALLED else "dim"
                line.append(f"out {fmt_age(silent)} ago  ", style=style)
            if progress.step and job.active:
                line.append(clean(progress.step, 120), style="dim")
            self.outline.show_steps(progress.steps)
        error_step = job.record.error_step or (progress.error_step if progress else None)
        if error_step:
            line.append("failed at " + clean(error_step, 120), style=look)
        if job.failure is not None:  # why, and what to do next (outside text: sanitised)
            line.append("\n" + clean(job.failure.why, 300), style=look)
            line.append("\nnext: " + clean(job.failure.next, 200), style="bold")
        self.header.update(line)

    def toggle_outline(self) -> None:
        """Show or hide the step outline."""
        self.outline.display = not self.outline.display

    def apply_layout(self, layout: PaneLayout) -> None:
        """The outline as the operator last left it (width, shown or not)."""
        if layout.outline_width is not None:
            self.outline.styles.width = layout.outline_width
            self.outline.styles.max_width = None  # the operator's width, not the sheet's cap
        self.outline.display = layout.outline_shown

    @on(Tree.NodeSelected)
    def _jump(self, event: Tree.NodeSelected[StepView]) -> None:
        step = event.node.data
        if step is None:
            return
        self.view.goto_step(step.number)  # the step's first line in the log

    def show_step(self, name: str) -> None:
        """The first line of the step named `name` (as BuildKit names it: a timeline's Enter);
        a step the plain log does not name is said by the view."""
        self.view.goto_step_named(name)
