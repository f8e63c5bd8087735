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

from rocmtui.app.model import JOB_SYMBOLS, JobView, StepView, fmt_age, fmt_counter
from rocmtui.app.text import clean
from rocmtui.core.states import JobState

STEP_SYMBOLS = {"done": "✓", "cached": "≡", "error": "✗", "canceled": "⊘", "running": "▶"}
TAIL_LINES = 2000


def make_log_view(path: Path | None) -> tuple[Widget, bool]:
    """The real LogView when present, else the fallback tail; (widget, is_fallback)."""
    try:
        from rocmtui.app.widgets.logview import LogView
    except ImportError:
        return TailView(path), True
    return LogView(path, follow=True), False


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
        """Read what was appended every 0.2 s and write it in one batch (never line by line)."""
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
                if size > offset:
                    with open(self.path, "rb") as fh:
                        fh.seek(offset)
                        chunk = fh.read(min(size - offset, 4 << 20))
                    offset += len(chunk)
                    data = partial + chunk
                    cut = data.rfind(b"\n") + 1
                    partial = data[cut:]
                    lines = data[:cut].decode("utf-8", "replace").splitlines()[-TAIL_LINES:]
                    if lines:
                        clean_lines = [sanitize_line(line) for line in lines]
                        self.app.call_from_thread(self._append, clean_lines)
            except OSError:
                pass
            time.sleep(0.2)

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
        """First render."""
        self.update_job(self.job, now=self.app.clock())  # type: ignore[attr-defined]

    def update_job(self, job: JobView, now: float | None) -> None:
        """New job state or progress from the job store."""
        import time

        self.job = job
        now = time.time() if now is None else now
        word = str(job.state)
        line = Text()
        line.append(f"{JOB_SYMBOLS.get(word, '?')} {word}", style="bold")
        line.append(f"  {clean(job.target)} {clean(job.arch or '')} on {clean(job.node)}")
        line.append(f"  job {clean(job.id)}  {fmt_age(job.duration(now))}", style="dim")
        progress = job.progress
        if progress is not None:
            counter = fmt_counter(progress)
            if counter:
                line.append("  " + counter)
            if progress.step and job.active:
                line.append("  " + clean(progress.step, 80), style="dim")
            if progress.last_output_at is not None and job.active:
                silent = now - progress.last_output_at
                style = "bold reverse" if job.state == JobState.STALLED else "dim"
                line.append(f"  out {fmt_age(silent)} ago", style=style)
            if progress.error_step:
                line.append("  failed at " + clean(progress.error_step, 80), style="bold")
            self.outline.show_steps(progress.steps)
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
        if step is None or step.first_line is None:
            return
        target: Any = self.view
        for name in ("goto_line", "jump_to_line", "scroll_to_line"):
            method = getattr(target, name, None)
            if method is not None:
                method(step.first_line)
                return
