"""One job's log pane: a header with the job's state and progress, the BuildKit step outline
(collapsible) beside the log view.

The log view itself is `rocmtui.app.widgets.logview.LogView` (file-backed, bounded memory, its
own find/filter/follow/wrap keys). Until that module is present this pane falls back to a small
file tail so the console stays usable; the fallback says so in the header.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widget import Widget
from textual.widgets import Log, Static, Tree
from textual.worker import get_current_worker

from rocmtui.app.model import JobView, StepView, fmt_counter
from rocmtui.app.text import clean
from rocmtui.core.display import fmt_age
from rocmtui.core.states import JOB_SYMBOLS, JobState

STEP_SYMBOLS = {"done": "✓", "cached": "≡", "error": "✗", "canceled": "⊘", "running": "▶"}
TAIL_LINES = 2000  # kept by the fallback view
TAIL_BATCH = 200  # lines written per tick at most: a screenful, whatever the build's rate


def make_log_view(path: Path | None) -> tuple[Widget, bool]:
    """The real LogView when present, else the fallback tail; (widget, is_fallback)."""
    try:
        from rocmtui.app.widgets.logview import LogView
    except ImportError:
        return TailView(path), True

    class PaneLogView(LogView):
        """LogView whose escape, with nothing to clear, goes back to the fleet screen."""

        def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
            """Let escape fall through to the screen when there is nothing to clear."""
            if action == "clear":
                busy = (
                    getattr(self.body, "anchor", None) is not None
                    or getattr(self, "_find", None) is not None
                    or getattr(self, "_filter", None) is not None
                )
                if not busy:
                    return False
            return super().check_action(action, parameters)

    return PaneLogView(path, follow=True), False


class TailView(Log):
    """Fallback log view: follows the file's end in a thread, at most TAIL_LINES kept."""

    def __init__(self, path: Path | None) -> None:
        super().__init__(max_lines=TAIL_LINES, highlight=False, auto_scroll=True, id="tail")
        self.path = path

    def on_mount(self) -> None:
        """Start following."""
        if self.path is not None:
            self.follow()

    @work(thread=True, exclusive=True, name="log-tail", group="log", exit_on_error=False)
    def follow(self) -> None:
        """Read what was appended every 0.1 s and write it in one batch (never line by line)."""
        import time

        from rocmtui.core.sanitize import sanitize_line

        assert self.path is not None
        worker = get_current_worker()
        offset = max(0, self.path.stat().st_size - 256 * 1024) if self.path.exists() else 0
        partial = b""
        while not worker.is_cancelled:
            try:
                size = self.path.stat().st_size
                if size < offset:
                    offset, partial = 0, b""
                if size - offset > 256 * 1024:  # far behind: skip to the last screenful
                    offset, partial, skipped = size - 64 * 1024, b"", True
                else:
                    skipped = False
                if size > offset:
                    with open(self.path, "rb") as fh:
                        fh.seek(offset)
                        chunk = fh.read(min(size - offset, 4 << 20))
                    offset += len(chunk)
                    data = partial + chunk
                    if skipped:  # we landed inside a line: drop its tail
                        data = data[data.find(b"\n") + 1 :]
                    cut = data.rfind(b"\n") + 1
                    partial = data[cut:]
                    # only the newest lines: bounded work per tick however fast the build writes
                    lines = data[:cut].decode("utf-8", "replace").splitlines()[-TAIL_BATCH:]
                    if lines:
                        clean_lines = [sanitize_line(line) for line in lines]
                        self.app.call_from_thread(self._append, clean_lines)
            except OSError:
                pass
            time.sleep(0.1)

    def _append(self, lines: list[str]) -> None:
        self.write_lines(lines)
        self.refresh()  # Log(max_lines) goes stale once it prunes (HAZARDS: speed traps)


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
            label.append(clean(step.name, 80))
            if step.duration is not None:
                label.append(f" {step.duration:.1f}s", style="dim")
            self.root.add_leaf(label, data=step)


class LogPane(Vertical):
    """A job's header, steps and log."""

    def __init__(self, job: JobView, *, id: str) -> None:
        super().__init__(id=id, classes="logpane")
        self.job = job
        self.view, self.fallback = make_log_view(job.log_path)
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
        self.update_job(self.job, now=self.app.clock())  # type: ignore[attr-defined]
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
        import time

        self.job = job
        now = time.time() if now is None else now
        word = str(job.state)
        line = Text(no_wrap=True, overflow="ellipsis")
        line.append(f"{JOB_SYMBOLS.get(word, '?')} {word}", style="bold")
        line.append(f"  {clean(job.target)} {clean(job.arch or '')} on {clean(job.node)}")
        line.append(f"  job {clean(job.id)}  {fmt_age(job.duration(now))}", style="dim")
        if job.exit_code is not None:
            line.append(f"  exit {job.exit_code}", style="dim")
        if job.digest:
            line.append("  " + clean(job.digest, 80)[:19], style="dim")
        line.append("\n")  # second line: where the build is now
        progress = job.progress
        if progress is not None:
            counter = fmt_counter(progress)
            if counter:
                line.append(counter + "  ", style="bold")
            if progress.last_output_at is not None and job.active:
                silent = now - progress.last_output_at
                style = "bold reverse" if job.state == JobState.STALLED else "dim"
                line.append(f"out {fmt_age(silent)} ago  ", style=style)
            if progress.step and job.active:
                line.append(clean(progress.step, 120), style="dim")
            self.outline.show_steps(progress.steps)
        error_step = job.error_step or (progress.error_step if progress else None)
        if error_step:
            line.append("failed at " + clean(error_step, 120), style="bold")
        if job.log_path is None:
            line.append("  (no log file recorded)", style="dim")
        if self.fallback:
            line.append("  [simple tail: last lines only]", style="dim")
        self.header.update(line)

    def toggle_outline(self) -> None:
        """Show or hide the step outline."""
        self.outline.display = not self.outline.display

    @on(Tree.NodeSelected)
    def _jump(self, event: Tree.NodeSelected[StepView]) -> None:
        step = event.node.data
        if step is None:
            return
        target: Any = self.view
        if hasattr(target, "goto_step"):
            target.goto_step(step.number)  # the step's first line in the log
        elif hasattr(target, "goto_line") and step.first_line is not None:
            target.goto_line(step.first_line + 1)
