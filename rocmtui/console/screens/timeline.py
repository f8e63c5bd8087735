"""The timeline screen (`t` on a job row, a history row or in a log pane): one build's steps as
a waterfall (`widgets/waterfall`), its critical path highlighted and summed, live while the
build runs; Enter on a step opens the build's log at that step; `D` sets the build beside its
baseline (`history.baseline.diff_jobs`: per step then and now, the first miss and why), `D`
again back to the waterfall.

The steps come from the core (`history.stepstore.steps_of`: kept in the job store, else read
from BuildKit's history on the build's node) in a thread worker, never on the event loop;
while the build runs they are read again every `LIVE_SECONDS` (a short look at BuildKit's
live stream), so the open step grows. Tests show recorded reports (`show`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Static

from rocmtui.console import keys, stylesheets
from rocmtui.console.backend.books import Unreadable, baseline_diff, step_report
from rocmtui.console.intents import LogRequested
from rocmtui.console.outside_text import clean
from rocmtui.console.screens.catalog import CatalogScreen
from rocmtui.console.widgets.common import Palette, Panel, StatusLine
from rocmtui.console.widgets.footer import QuietFooter
from rocmtui.console.widgets.waterfall import Waterfall
from rocmtui.core.config.fleetfile import FleetConfig
from rocmtui.core.history.stepdiff import BuildDiff
from rocmtui.core.history.stepreport import StepReport
from rocmtui.core.text.units import fmt_seconds

LIVE_SECONDS = 2.0  # a running build's steps read again this often
LIVE_PEEK = 1.5  # each read looks at BuildKit's live stream this long
SHOWN_DIFF = 500  # steps in the diff view (the CLI's --json gives every one)


class _Holder(Panel):
    """A titled panel around its widgets."""

    def __init__(self, title: str, children: tuple[Widget, ...], *, id: str) -> None:
        super().__init__(title, id=id)
        self.held = children

    def compose(self) -> ComposeResult:
        yield from super().compose()
        yield from self.held


class DiffLoaded(Message):
    """A worker compared the build with its baseline (or why not)."""

    def __init__(self, diff: BuildDiff | None, error: str | None = None) -> None:
        super().__init__()
        self.diff = diff
        self.error = error


def diff_text(diff: BuildDiff, palette: Palette) -> Text:
    """The build against its baseline: the verdict, then per step then and now."""
    out = Text(no_wrap=True, overflow="ellipsis")
    out.append(f"against {diff.then_job}: ", style=palette.muted)
    miss = diff.first_miss is not None
    out.append(diff.verdict, style=palette.bad if miss else palette.good)
    out.append(f"\n  {'THEN':>8} {'NOW':>8}  STEP", style=palette.muted)

    def cell(run: float | None, cached: bool | None) -> str:
        return "-" if cached is None else "cached" if cached else fmt_seconds(run)

    for s in diff.steps[:SHOWN_DIFF]:
        style = palette.bad if s.missed else None
        out.append(f"\n{'!' if s.missed else ' '} ", style=style)
        out.append(f"{cell(s.then_run, s.then_cached):>8} {cell(s.now_run, s.now_cached):>8}  ")
        out.append(s.name, style=style)
    if len(diff.steps) > SHOWN_DIFF:
        out.append(f"\n(the first {SHOWN_DIFF} of {len(diff.steps)} steps)", style=palette.muted)
    return out


class TimelineLoaded(Message):
    """A worker read the steps (or why not)."""

    def __init__(self, report: StepReport | None, error: str | None = None) -> None:
        super().__init__()
        self.report = report
        self.error = error


def summary_text(title: str, report: StepReport | None, palette: Palette) -> Text:
    """The words over the waterfall: the build, its steps, the critical path summed."""
    out = Text(no_wrap=True, overflow="ellipsis")
    out.append(title)
    if report is None:
        return out
    cached = sum(1 for s in report.steps if s.cached)
    out.append(f" · {len(report.steps)} steps, {cached} cached · {fmt_seconds(report.span)}")
    if report.running:
        out.append(" · running", style=palette.busy)
    path = report.critical_steps
    if path:
        out.append("\n* critical path: ", style=palette.accent)
        out.append(f"{len(path)} steps, {fmt_seconds(report.path.run)} · ")
        # the steps that weigh most on it, in their order: the chain's story in one line
        heavy = sorted(path, key=lambda s: s.run or 0.0, reverse=True)[:3]
        out.append(" → ".join(f"{s.name} {fmt_seconds(s.run)}" for s in path if s in heavy))
    if report.path.note:
        out.append(f"\n{report.path.note}", style=palette.warn)
    if report.dropped:
        out.append(f"\n{report.dropped} more steps not kept", style=palette.warn)
    return out


class TimelineScreen(CatalogScreen):
    """One build's steps on a time axis."""

    CSS_PATH = stylesheets.STYLES / "timeline.tcss"
    SCOPE = "timeline"
    BINDINGS: ClassVar[list[BindingType]] = list(keys.bindings("timeline"))

    def __init__(
        self,
        config: FleetConfig,
        job_id: str,
        title: str,
        *,
        running: bool = False,
        clock: Callable[[], float] = time.time,
        live: bool = True,
        read_only: bool,
        keymap: Mapping[str, str],
    ) -> None:
        """`live` False: a test shows recorded reports (`show`); nothing is read."""
        super().__init__(read_only=read_only, keymap=keymap, id="timeline")
        self.config = config
        self.job_id = job_id
        self.title_text = clean(title, 120)
        self.running = running
        self.clock = clock
        self.live = live
        self.report: StepReport | None = None
        self.error: str | None = None
        self.loading = False
        self.summary = Static("", id="timeline-summary", markup=False)
        # why there are no steps, in the body and wrapped: in the status line alone a long
        # reason ("... keeps no build history ...") was cut at the edge over an empty panel
        self.notice = Static("", id="timeline-notice", markup=False)
        self.waterfall = Waterfall(id="timeline-waterfall")
        self.diff_view = Static("", id="timeline-diff", markup=False)
        self.diff: BuildDiff | None = None

    def compose(self) -> ComposeResult:
        """Status line, the summary, the waterfall, the footer."""
        yield StatusLine(id="timeline-status")
        yield _Holder(
            "Timeline · wait ·, run █, cached ▒, * critical path",
            (
                self.summary,
                self.notice,
                self.waterfall,
                VerticalScroll(self.diff_view, id="timeline-diffs"),
            ),
            id="timeline-panel",
        )
        yield QuietFooter()

    def on_mount(self) -> None:
        """Read the steps (unless a test shows recorded ones); again while the build runs."""
        self.waterfall.focus()
        self.render_status()
        if self.live:
            self.reload()
            self.set_interval(LIVE_SECONDS, self._live_tick, name="timeline-live")

    def _live_tick(self) -> None:
        if self.running:
            self.reload()

    def reload(self) -> None:
        """Read the steps in a worker (one at a time)."""
        if not self.loading:
            self.loading = True
            self.render_status()
            self._load()

    @work(thread=True, exclusive=True, group="timeline", exit_on_error=False, name="timeline")
    def _load(self) -> None:
        try:
            report = step_report(self.config, self.job_id, self.clock(), LIVE_PEEK)
        except Unreadable as exc:
            self.post_message(TimelineLoaded(None, str(exc)))
            return
        self.post_message(TimelineLoaded(report))

    @on(TimelineLoaded)
    def _loaded(self, message: TimelineLoaded) -> None:
        self.loading = False
        if message.report is None:
            self.error = message.error
            self.summary.update(summary_text(self.title_text, None, self.palette))
            why = f"No steps to show: {clean(self.error, 600)}"
            self.notice.update(Text(why, style=self.palette.bad))
            self.notice.display = True
            self.render_status()
        else:
            self.show(message.report)

    def show(self, report: StepReport) -> None:
        """Draw a report (tests call this with recorded data)."""
        self.report, self.error = report, None
        self.notice.display = False
        self.running = report.running
        self.summary.update(summary_text(self.title_text, report, self.palette))
        self.waterfall.show(report, self.palette)
        self.render_status()

    def render_status(self) -> None:
        """One line: the job, and whether it is reading or could not."""
        line = Text()
        line.append(" rocmtui ", style="bold reverse")
        line.append(f" timeline · {self.job_id}")
        if self.report is None and not self.error:
            line.append(" · reading the steps…", style=self.palette.muted)
        elif self.loading and not self.running:
            line.append(" · reading…", style=self.palette.muted)
        if self.error:
            line.append(" · no steps (below)", style=self.palette.bad)
        self.query_one("#timeline-status", StatusLine).show(line)

    @on(Waterfall.Chosen)
    def _chosen(self, message: Waterfall.Chosen) -> None:
        self.post_message(LogRequested(self.job_id, at=message.step.name))

    def action_toggle_diff(self) -> None:
        """`D`: the build against its baseline; again: back to the waterfall."""
        holder = self.query_one("#timeline-diffs")
        showing = not holder.display
        holder.display = showing
        self.waterfall.display = not showing
        if not showing:
            self.waterfall.focus()
            return
        holder.focus()
        if self.diff is None:
            self.diff_view.update(Text("comparing with the last build…", style=self.palette.muted))
            if self.live:
                self._load_diff()

    @work(thread=True, exclusive=True, group="timeline-diff", exit_on_error=False, name="diff")
    def _load_diff(self) -> None:
        try:
            self.post_message(DiffLoaded(baseline_diff(self.config, self.job_id)))
        except Unreadable as exc:
            self.post_message(DiffLoaded(None, str(exc)))

    @on(DiffLoaded)
    def _diff_loaded(self, message: DiffLoaded) -> None:
        if message.diff is None:
            self.diff_view.update(Text(clean(message.error or "", 300), style=self.palette.bad))
        else:
            self.show_diff(message.diff)

    def show_diff(self, diff: BuildDiff) -> None:
        """Draw a diff (tests call this with recorded data)."""
        self.diff = diff
        self.diff_view.update(diff_text(diff, self.palette))

    def action_refresh(self) -> None:
        """ctrl+r: read again."""
        if self.live:
            self.reload()

    def action_back(self) -> None:
        """Back to the screen below."""
        self.app.pop_screen()
