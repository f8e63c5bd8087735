"""The history screen (`h`): what builds cost, per target × arch × node.

A table of every target × arch × node with builds (its last build's duration and condition, the
next build's estimate, a `!` on a regression), the selected group's evidence and spread in
words, and two plots of it (duration over time, spread per condition; `widgets/costplots`,
imported here, when the screen is first made). The data is the core's `HistoryReport`, read in
a thread worker through the console's door (`backend/books.cost_report`, which brings the job
store's cost book up to date first) when the screen is shown, every `RELOAD_SECONDS` while it
is, and on ctrl+r; tests show recorded reports (`show`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Static

from rocmtui.console import keys, stylesheets
from rocmtui.console.backend.books import Unreadable, cost_report, step_trend
from rocmtui.console.intents import TimelineRequested
from rocmtui.console.outside_text import clean
from rocmtui.console.screens.catalog import CatalogScreen
from rocmtui.console.widgets.common import Palette, Panel, StatusLine
from rocmtui.console.widgets.costplots import DurationPlot, SpreadPlot
from rocmtui.console.widgets.footer import QuietFooter
from rocmtui.console.widgets.steptrend import StepTrendPanel
from rocmtui.console.widgets.table import Fit, SnapshotTable
from rocmtui.core.config.fleetfile import FleetConfig
from rocmtui.core.costbook.cost import CONDITIONS, Condition
from rocmtui.core.costbook.report import GroupReport, HistoryReport
from rocmtui.core.history.steptrend import StepTrend
from rocmtui.core.text.units import fmt_age, fmt_when

RELOAD_SECONDS = 60.0
RESUME_STALE = 15.0  # shown again after this long: read again (not after every dialog)
COLUMNS = ("Target", "Arch", "Node", "Builds", "Last", "Condition", "Next", "")
FITS = (
    Fit(min=8, turn=3),
    Fit(),
    Fit(min=6, turn=2),
    Fit(drop=True, turn=1),
    Fit(),
    Fit(),
    Fit(min=8, turn=2),
    Fit(),
)


class _Holder(Panel):
    """A titled panel around one widget."""

    def __init__(self, title: str, child: Widget, *, id: str) -> None:
        super().__init__(title, id=id)
        self.child = child

    def compose(self) -> ComposeResult:
        yield from super().compose()
        yield self.child


class HistoryLoaded(Message):
    """A report read by the worker (or its failure)."""

    def __init__(self, report: HistoryReport | None, error: str | None = None) -> None:
        super().__init__()
        self.report = report
        self.error = error


class TrendLoaded(Message):
    """A target × arch's step trend read by the worker (or why it could not be)."""

    def __init__(self, key: tuple[str, str], trend: StepTrend | None, error: str | None) -> None:
        super().__init__()
        self.key = key
        self.trend = trend
        self.error = error


class GroupTable(SnapshotTable):
    """The groups' table; a cursor move says so (the detail and plots follow it)."""

    class Moved(Message):
        """The cursor is on another row."""

    def move_cursor(self, row: int) -> None:
        """Move, and tell the screen."""
        before = self.cursor_row
        super().move_cursor(row)
        if self.cursor_row != before:
            self.post_message(self.Moved())


def group_key(group: GroupReport) -> str:
    """A table row's key."""
    return "\t".join(group.key)


def condition_text(condition: Condition, palette: Palette) -> Text:
    """`W warm`: the letter the plots draw, then the word (never colour alone)."""
    style = {
        Condition.FROZEN: palette.accent,
        Condition.HOT: palette.good,
        Condition.WARM: palette.warn,
        Condition.COLD: palette.bad,
    }.get(condition, palette.muted)
    return Text(f"{condition.letter} {condition}", style=style)


def group_row(group: GroupReport, palette: Palette) -> tuple[str, list[Text]]:
    """One table row."""
    last = group.last
    flag = Text("! slower" if any(r.kind == "duration" for r in group.regressions) else "")
    if any(r.kind == "hit-rate" for r in group.regressions):
        flag = Text(f"{flag.plain} ! hits".strip())
    flag.stylize(palette.bad)
    return group_key(group), [
        Text(clean(group.target, 40)),
        Text(group.arch or "-"),
        Text(clean(group.node, 30)),
        Text(str(group.builds), justify="right"),
        Text(fmt_age(last.duration) if last else "-", justify="right"),
        condition_text(last.condition, palette) if last else Text("-"),
        Text(group.estimate.short() if group.estimate else "-"),
        flag,
    ]


def detail_text(report: HistoryReport, group: GroupReport, now: float, palette: Palette) -> Text:
    """The selected group in words: its last build's evidence, the spread, regressions and
    running builds."""
    out = Text(no_wrap=True, overflow="ellipsis")
    last = group.last
    if last is not None:
        out.append("last ", style=palette.muted)
        out.append(f"{last.describe()} · {fmt_age(last.duration)} · {last.outcome}")
        out.append(f" · {fmt_when(last.started_at, now)} by {clean(last.started_by, 40)}")
    shown = [(c, group.stats[c]) for c in CONDITIONS if c in group.stats]
    for index, (condition, stats) in enumerate(shown):
        # two conditions a line: the spread fits 80 columns in two lines
        out.append("\n" if index % 2 == 0 else "  ")
        out.append(f"{condition.letter} {stats.count}× ", style=palette.muted)
        out.append(f"{fmt_age(stats.median)}/{fmt_age(stats.p90)}/{fmt_age(stats.last)}".ljust(26))
    notes = [(f"! {r.describe()}", palette.bad) for r in group.regressions]
    notes += [
        (f"running {fmt_age(row.duration)} · {report.running_note(row) or 'first build'}",
         palette.busy)
        for row in report.running
        if row.group == group.key
    ]  # fmt: skip
    if notes:
        out.append("\n")
        for index, (note, style) in enumerate(notes):
            out.append(("" if index == 0 else " · ") + note, style=style)
    return out


class HistoryScreen(CatalogScreen):
    """Every target × arch × node's builds: costs, conditions, regressions, plots."""

    CSS_PATH = stylesheets.STYLES / "history.tcss"  # its own sheet, read when first shown
    SCOPE = "history"
    BINDINGS: ClassVar[list[BindingType]] = list(keys.bindings("history"))

    def __init__(
        self,
        config: FleetConfig,
        *,
        clock: Callable[[], float] = time.time,
        live: bool = True,
        read_only: bool,
        keymap: Mapping[str, str],
    ) -> None:
        """`live` False: a test shows recorded reports (`show`); nothing is read."""
        super().__init__(read_only=read_only, keymap=keymap, id="history")
        self.config = config
        self.clock = clock
        self.live = live
        self.report: HistoryReport | None = None
        self.error: str | None = None
        self.loading = False
        self.table = GroupTable(COLUMNS, id="history-table", fits=FITS)
        self.detail = Static("", id="history-detail", markup=False)
        self.over_time = DurationPlot(id="history-time")
        self.spread = SpreadPlot(id="history-spread")
        self.steps = StepTrendPanel(id="history-steps")
        self.trend_key: tuple[str, str] | None = None  # the target × arch the panel shows
        self.trend_stale = False  # the history was read again since the trend was

    def compose(self) -> ComposeResult:
        """Status line, the groups, the selected one in words and in plots, the footer."""
        yield StatusLine(id="history-status")
        yield _Holder("History · target × arch × node", self.table, id="history-panel")
        yield _Holder(
            "Selected · per condition: median/p90/last", self.detail, id="history-detail-panel"
        )
        with Horizontal(id="history-plots"):
            yield self.over_time
            yield self.spread
        yield self.steps
        yield QuietFooter()

    def on_mount(self) -> None:
        """Read the history (unless a test shows recorded reports)."""
        self.table.focus()
        self.render_status()
        if self.live:
            self.reload()
            self.set_interval(RELOAD_SECONDS, self.reload, name="history-reload")

    def on_screen_resume(self) -> None:
        """Shown again after a while: read again. Not when a dialog (help, the palette)
        closes over it: a read of 10,000 builds holds the GIL ~0.1 s, and every `?` and
        escape would pay it (measured: key p95 tripled)."""
        report = self.report
        if self.live and report is not None and self.clock() - report.generated_at > RESUME_STALE:
            self.reload()

    def reload(self) -> None:
        """Read the history in a worker (one at a time)."""
        if not self.loading:
            self.loading = True
            self.render_status()
            self._load()

    @work(thread=True, exclusive=True, group="history", exit_on_error=False, name="history")
    def _load(self) -> None:
        try:
            self.post_message(HistoryLoaded(cost_report(self.config, self.clock())))
        except Unreadable as exc:
            self.post_message(HistoryLoaded(None, str(exc)))

    @on(HistoryLoaded)
    def _loaded(self, message: HistoryLoaded) -> None:
        self.loading = False
        if message.report is None:
            self.error = message.error
            self.render_status()
        else:
            self.show(message.report)

    def show(self, report: HistoryReport) -> None:
        """Render a report (tests call this with recorded data)."""
        self.report, self.error = report, None
        palette = self.palette
        self.table.show_rows([group_row(g, palette) for g in report.groups])
        self.render_status()
        self.trend_stale = True  # a new build may have ended: the panel reads its steps again
        self.show_selected()

    @on(GroupTable.Moved)
    def show_selected(self) -> None:
        """The group under the cursor in words and plots."""
        report = self.report
        key = self.table.selected_key
        group = None
        if report is not None and key is not None:
            group = next((g for g in report.groups if group_key(g) == key), None)
        if report is None or group is None:
            self.detail.update("no builds recorded yet" if report else "reading the history…")
            self.over_time.draw([], self.clock())
            self.spread.draw([])
            return
        now = self.clock()
        self.detail.update(detail_text(report, group, now, self.palette))
        points = report.points(group.key)
        self.over_time.draw(points, now)
        self.spread.draw(points)
        if self.has_class("-steps"):
            self.read_trend(group)

    def render_status(self) -> None:
        """One line: how many builds, groups, regressions, and whether it is reading."""
        line = Text()
        line.append(" rocmtui ", style="bold reverse")
        line.append(" history")
        report = self.report
        if report is not None:
            flagged = sum(1 for g in report.groups if g.regressions)
            line.append(f" · {len(report.builds)} builds · {len(report.groups)} target×arch×node")
            if report.running:
                line.append(f" · {len(report.running)} running")
            if flagged:
                line.append(f" · ! {flagged} regressed", style=self.palette.bad)
        if self.loading:
            line.append(" · reading…", style=self.palette.muted)
        if self.error:
            line.append(f" · cannot read: {clean(self.error, 120)}", style=self.palette.bad)
        self.query_one("#history-status", StatusLine).show(line)

    def action_show_timeline(self) -> None:
        """`t`: the selected group's last build's steps on a time axis."""
        group = self.selected_group()
        if group is None or group.last is None:
            self.notify("No build selected.", severity="information", markup=False)
            return
        self.post_message(TimelineRequested(group.last.job_id))

    def selected_group(self) -> GroupReport | None:
        """The group under the cursor (None: nothing read, or no row)."""
        report, key = self.report, self.table.selected_key
        if report is None or key is None:
            return None
        return next((g for g in report.groups if group_key(g) == key), None)

    def action_toggle_steps(self) -> None:
        """`S`: the selected target × arch's steps across its last builds in place of the
        plots, `S` again: the plots."""
        self.toggle_class("-steps")
        if not self.has_class("-steps"):
            return
        group = self.selected_group()
        if group is None:
            self.steps.show_note("No build selected.")
        else:
            self.read_trend(group)

    def read_trend(self, group: GroupReport) -> None:
        """Read `group`'s target × arch's trend in a worker: on a move to another target ×
        arch (a note says it is reading), or after the history was read again (the trend
        shown stays until the new one is in). A move to another node of the same target ×
        arch reads nothing."""
        key = (group.target, group.arch)
        same = key == self.trend_key and self.steps.trend is not None
        if same and not self.trend_stale:
            return
        self.trend_key, self.trend_stale = key, False
        if not same:
            self.steps.show_note(f"reading the steps of {clean(group.target, 40)} {group.arch}…")
        if self.live:
            self._load_trend(key)

    @work(thread=True, exclusive=True, group="steptrend", exit_on_error=False, name="steptrend")
    def _load_trend(self, key: tuple[str, str]) -> None:
        try:
            self.post_message(TrendLoaded(key, step_trend(self.config, *key), None))
        except Unreadable as exc:
            self.post_message(TrendLoaded(key, None, str(exc)))

    @on(TrendLoaded)
    def _trend_loaded(self, message: TrendLoaded) -> None:
        if message.key != self.trend_key:
            return  # the cursor moved on meanwhile
        if message.trend is None:
            self.steps.show_note(f"cannot read the steps: {clean(message.error, 200)}")
        else:
            self.show_trend(message.trend)

    @on(SnapshotTable.RowSelected, "#steps-table")
    def _step_chosen(self, message: SnapshotTable.RowSelected) -> None:
        """Enter on a step of the panel (Tab reaches it): the timeline of the newest build
        that has that step."""
        message.stop()
        job = self.steps.newest_with(message.key)
        if job is not None:
            self.post_message(TimelineRequested(job))

    def show_trend(self, trend: StepTrend) -> None:
        """Draw a trend (tests call this with recorded data)."""
        self.trend_key = (trend.target, trend.arch)
        self.steps.show_trend(trend, self.palette, self.clock())

    def action_back(self) -> None:
        """Back to the screen below."""
        self.app.pop_screen()

    def action_refresh(self) -> None:
        """ctrl+r: read again now."""
        if self.live:
            self.reload()
