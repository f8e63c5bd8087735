"""The Runs screen (`u` from the fleet screen): fleet runs, newest first, one drawn as a chart.

The chart (`widgets/runchart`) shows the selected run: a lane per node, a bar per build,
growing each second while a build runs; under it the wall time, the chain of builds that set
the run's length and the lines the run carries (a node that did not start, builds lost from
the store). The table lists every run (the selector; the newest is selected first), and the
comparison says which build on which node got slower against a baseline: the run marked with
`k`, else the run of the same target before the selected one. Runs are read in a thread
worker (`RunBook`, which also adopts builds started elsewhere across nodes as runs) when shown,
every `RELOAD_SECONDS` (`LIVE_RELOAD_SECONDS` while a run is in flight) and on ctrl+r; a
switch between runs only draws (no read). Tests show recorded runs (`show`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.message import Message
from textual.widget import Widget

from rocmtui.console import keys, stylesheets
from rocmtui.console.backend.books import Unreadable, fleet_runs
from rocmtui.console.intents import NewRunRequested, RunAgainRequested
from rocmtui.console.outside_text import clean
from rocmtui.console.screens.catalog import CatalogScreen
from rocmtui.console.widgets.common import Palette, Panel, StatusLine
from rocmtui.console.widgets.footer import QuietFooter
from rocmtui.console.widgets.runchart import RunChart, TextBlock
from rocmtui.console.widgets.table import Fit, SnapshotTable
from rocmtui.core.config.fleetfile import FleetConfig
from rocmtui.core.runs.chart import Chart, chart, compare, compare_line, wall_of
from rocmtui.core.runs.run import Run
from rocmtui.core.text.units import fmt_age, fmt_when

RELOAD_SECONDS = 30.0
LIVE_RELOAD_SECONDS = 3.0
GROW_SECONDS = 1.0  # a running run's bars are drawn again this often
COSTS_EVERY = 30.0  # s between two syncs of the cost book (a build settles 30 s after its end)
COMPARE_LINES = 3
COLUMNS = ("Run", "Target", "Started", "Builds", "Wall", "State", "")
FITS = (Fit(min=10, turn=3), Fit(min=8, turn=2), Fit(), Fit(drop=True, turn=1), Fit(), Fit(), Fit())


class _Holder(Panel):
    """A titled panel around widgets."""

    def __init__(self, title: str, *children: Widget, id: str) -> None:
        super().__init__(title, id=id)
        self.children_ = children

    def compose(self) -> ComposeResult:
        yield from super().compose()
        yield from self.children_


class RunsLoaded(Message):
    """Runs read by the worker (or its failure)."""

    def __init__(
        self,
        runs: list[Run] | None,
        error: str | None = None,
        walls: dict[str, float] | None = None,
    ) -> None:
        super().__init__()
        self.runs = runs
        self.error = error
        self.walls = walls or {}  # each finished run's wall, worked out on the worker's thread


class RunTable(SnapshotTable):
    """The runs' table; a cursor move says so (the chart follows it)."""

    class Moved(Message):
        """The cursor is on another row."""

    def move_cursor(self, row: int) -> None:
        """Move, and tell the screen."""
        before = self.cursor_row
        super().move_cursor(row)
        if self.cursor_row != before:
            self.post_message(self.Moved())


def run_row(
    r: Run, baseline: str | None, now: float, palette: Palette, wall: float | None = None
) -> tuple[str, list[Text]]:
    """One table row: the run's id (its short end), target, start, builds, wall, state."""
    state = r.state()
    style = {"running": palette.busy, "failed": palette.bad, "not started": palette.bad}.get(
        state, palette.good
    )
    return r.id, [
        Text(r.id.removeprefix("run-")),
        Text(clean(r.target, 40)),
        Text(fmt_when(r.started_at, now)),
        Text(f"{len(r.builds)} on {len(r.nodes)}", justify="right"),
        Text(fmt_age(wall_of(r, now) if wall is None else wall), justify="right"),
        Text(state, style=style),
        Text("◆ baseline" if r.id == baseline else "", style=palette.accent),
    ]


def summary_text(drawn: Chart, now: float, palette: Palette) -> Text:
    """Under the chart: wall, who started it, the chain, the run's own notes."""
    r = drawn.run
    out = Text(no_wrap=True, overflow="ellipsis")
    out.append(f"{clean(r.target, 40)} · wall {fmt_age(drawn.wall)}")
    out.append(f" · {r.origin}: {clean(r.started_by, 40)}", style=palette.muted)
    chain = drawn.links  # its bars: a group's targets, each with its own length
    if chain:
        said = " → ".join(
            f"{clean(b.target, 30)} on {clean(b.node, 20)} {fmt_age(b.duration(now))}"
            for b in chain
        )
        out.append("\nset its length: ", style=palette.muted)
        out.append(said)
    for note in drawn.notes:
        out.append("\n" + clean(note, 200), style=palette.warn)
    return out


def compare_text(before: Run | None, after: Run, now: float, palette: Palette) -> Text:
    """Which build on which node got slower against `before`, most slowed first."""
    out = Text(no_wrap=True, overflow="ellipsis")
    if before is None:
        out.append("no earlier run to compare with", style=palette.muted)
        return out
    changes = compare(before, after, now)
    out.append(f"against {before.id.removeprefix('run-')}: ", style=palette.muted)
    out.append(
        clean(compare_line(changes), 200),
        style=palette.bad if any(c.slower for c in changes) else palette.good,
    )
    moved = [c for c in changes if c.slower or c.faster or c.before is None or c.after is None]
    for change in moved[:COMPARE_LINES]:
        out.append("\n" + clean(change.line(), 200), style=palette.bad if change.slower else "")
    return out


class RunsScreen(CatalogScreen):
    """Fleet runs: the newest drawn, every earlier one selectable, two compared."""

    CSS_PATH = stylesheets.STYLES / "runs.tcss"  # its own sheet, read when first shown
    SCOPE = "runs"
    BINDINGS: ClassVar[list[BindingType]] = list(keys.bindings("runs"))

    def __init__(
        self,
        config: FleetConfig,
        *,
        clock: Callable[[], float] = time.time,
        live: bool = True,
        read_only: bool,
        keymap: Mapping[str, str],
    ) -> None:
        """`live` False: a test shows recorded runs (`show`); nothing is read."""
        super().__init__(read_only=read_only, keymap=keymap, id="runs")
        self.config = config
        self.clock = clock
        self.live = live
        self.runs: list[Run] = []
        self.by_id: dict[str, Run] = {}
        self.walls: dict[str, float] = {}
        self._costs_synced_at = float("-inf")  # by the worker only
        self.read_at: float | None = None
        self.error: str | None = None
        self.loading = False
        self.baseline: str | None = None  # the run marked with `k`
        self.table = RunTable(COLUMNS, id="runs-table", fits=FITS)
        self.chart = RunChart(id="runs-chart")
        self.summary = TextBlock(id="runs-summary")
        self.comparison = TextBlock(id="runs-compare")

    def compose(self) -> ComposeResult:
        """Status line, the chart with its summary, the runs and the comparison, the footer."""
        yield StatusLine(id="runs-status")
        yield _Holder("Run · a lane per node, a bar per build", self.chart, self.summary,
                      id="runs-chart-panel")  # fmt: skip
        yield _Holder("Runs · newest first", self.table, id="runs-panel")
        yield _Holder("Compare", self.comparison, id="runs-compare-panel")
        yield QuietFooter()

    def on_mount(self) -> None:
        """Read the runs (unless a test shows recorded ones); let running bars grow."""
        self.table.focus()
        self.render_status()
        if self.live:
            self.reload()
            self.set_interval(GROW_SECONDS, self._tick, name="runs-grow")

    def on_screen_resume(self) -> None:
        """Shown again: read again when the last read is old."""
        if self.live and (
            self.read_at is None or self.clock() - self.read_at > LIVE_RELOAD_SECONDS
        ):
            self.reload()

    def _tick(self) -> None:
        """Each second: a running run's bars grow; read again when it is time."""
        if not self.is_current:
            return
        now = self.clock()
        selected = self.selected
        if selected is not None and selected.running():
            self.show_selected()
        live = any(r.running() for r in self.runs)
        every = LIVE_RELOAD_SECONDS if live else RELOAD_SECONDS
        if self.read_at is None or now - self.read_at >= every:
            self.reload()

    def reload(self) -> None:
        """Read the runs in a worker (one at a time)."""
        if not self.loading:
            self.loading = True
            self.render_status()
            self._load()

    @work(thread=True, exclusive=True, group="runs", exit_on_error=False, name="runs")
    def _load(self) -> None:
        now = self.clock()
        costs = now - self._costs_synced_at >= COSTS_EVERY
        try:
            runs = fleet_runs(self.config, now, costs)
        except Unreadable as exc:
            self.post_message(RunsLoaded(None, str(exc)))
            return
        if costs:
            self._costs_synced_at = now
        walls = {r.id: wall_of(r, now) for r in runs if not r.running()}
        self.post_message(RunsLoaded(runs, walls=walls))

    @on(RunsLoaded)
    def _loaded(self, message: RunsLoaded) -> None:
        self.loading = False
        self.read_at = self.clock()
        if message.runs is None:
            self.error = message.error
            self.render_status()
        else:
            self.show(message.runs, message.walls)

    def show(self, runs: Sequence[Run], walls: dict[str, float] | None = None) -> None:
        """Render runs, newest first (tests call this with recorded runs); `walls`: finished
        runs' wall times already worked out."""
        self.runs, self.error = list(runs), None
        self.walls = walls if walls is not None else self.walls
        self.by_id = {r.id: r for r in self.runs}
        if self.baseline not in self.by_id:
            self.baseline = None
        now = self.clock()
        palette = self.palette
        self.table.show_rows(
            [run_row(r, self.baseline, now, palette, self.walls.get(r.id)) for r in self.runs]
        )
        self.render_status()
        self.show_selected()

    @property
    def selected(self) -> Run | None:
        """The run under the cursor."""
        key = self.table.selected_key
        return self.by_id.get(key) if key is not None else None

    @on(RunTable.Moved)
    def show_selected(self) -> None:
        """Draw the run under the cursor, and compare it."""
        run = self.selected
        palette = self.palette
        if run is None:
            empty = "reading the runs…" if self.loading and not self.runs else None
            self.chart.draw(None, palette, empty)
            self.summary.show(Text())
            self.comparison.show(Text())
            return
        now = self.clock()
        drawn = chart(run, now, [n.name for n in self.config.nodes])
        self.chart.draw(drawn, palette)
        self.summary.show(summary_text(drawn, now, palette))
        self.comparison.show(compare_text(self.baseline_for(run), run, now, palette))

    def baseline_for(self, run: Run) -> Run | None:
        """The marked run (unless it is this one), else the same target's run before it."""
        if self.baseline is not None and self.baseline != run.id:
            return self.by_id.get(self.baseline)
        key = (run.started_at, run.id)
        earlier = [r for r in self.runs if (r.started_at, r.id) < key]
        return next((r for r in earlier if r.target == run.target), None)

    def render_status(self) -> None:
        """One line: how many runs, how many running, whether it is reading."""
        line = Text()
        line.append(" rocmtui ", style="bold reverse")
        line.append(" runs")
        if self.runs:
            running = sum(1 for r in self.runs if r.running())
            n = len(self.runs)
            line.append(f" · {n} run{'s' * (n != 1)}")
            if running:
                line.append(f" · {running} running", style=self.palette.busy)
        if self.loading:
            line.append(" · reading…", style=self.palette.muted)
        if self.error:
            line.append(f" · cannot read: {clean(self.error, 120)}", style=self.palette.bad)
        self.query_one("#runs-status", StatusLine).show(line)

    def action_back(self) -> None:
        """Back to the screen below."""
        self.app.pop_screen()

    def action_refresh(self) -> None:
        """ctrl+r: read again now."""
        if self.live:
            self.reload()

    def action_new_run(self) -> None:
        """`R`: the new-run dialog (the App's owner of intents opens it and starts the run)."""
        self.post_message(NewRunRequested())

    def action_rebuild(self) -> None:
        """`r`: the selected run's target on its nodes again (the App asks first). A run
        adopted from builds started elsewhere has no one target to start: said so."""
        run = self.selected
        if run is None:
            return
        if run.origin != "rocmtui":
            self.notify(
                f"{clean(run.id)} was started elsewhere ({clean(run.target, 60)}): run its "
                "target with rocmtui run TARGET",
                severity="warning",
                markup=False,
            )
            return
        self.post_message(RunAgainRequested(run.target, run.nodes, dict(run.overrides)))

    def action_mark_baseline(self) -> None:
        """`k`: compare every run with the selected one (again on it: back to the run before)."""
        run = self.selected
        if run is None:
            return
        self.baseline = None if self.baseline == run.id else run.id
        self.show(self.runs)
