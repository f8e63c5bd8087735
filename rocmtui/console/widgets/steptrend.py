"""The history screen's step panel (`S`): a target × arch's steps across its last builds.

One row per step (slowest first), one column per build (newest first, `now`, `-1`, ...): its
run time, `cached` when the cache gave it, `-` when the build has no such step. The newest
build's critical path is marked `*`, a step the cache held last time and not now `!` (marks,
never colour alone). A line above names each column's build; a build whose steps cannot be
had says why there. Step names are outside text: sanitised by the core, drawn as Text.
"""

from __future__ import annotations

import time

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Static

from rocmtui.console.outside_text import clean
from rocmtui.console.widgets.common import Palette, Panel
from rocmtui.console.widgets.table import Fit, SnapshotTable
from rocmtui.core.history.stepreport import shown_name
from rocmtui.core.history.steptrend import TREND_BUILDS, StepTrend, TrendCell, TrendRow
from rocmtui.core.text.units import fmt_seconds, fmt_when

LABELS = tuple(["now", *(f"-{i}" for i in range(1, TREND_BUILDS))])
COLUMNS = ("", "Step", *LABELS)
# the step's name shrinks first (builds side by side are the point), then the oldest builds
# give way; `now` and `-1` stay
FITS = (
    Fit(),
    Fit(min=24, turn=1),
    Fit(),
    Fit(),
    *(Fit(drop=True, turn=1 + TREND_BUILDS - i) for i in range(2, TREND_BUILDS)),
)


def cell_text(cell: TrendCell, palette: Palette) -> Text:
    """`12.3s`, `cached`, `?` (unknown time) or `-` (not in that build)."""
    if not cell.present:
        return Text("-", style=palette.muted, justify="right")
    if cell.cached:
        return Text("cached", style=palette.good, justify="right")
    return Text(fmt_seconds(cell.run) if cell.run is not None else "?", justify="right")


def trend_row(row: TrendRow, palette: Palette) -> tuple[str, list[Text]]:
    """One table row: marks, the step, a cell per build (blank past the builds there are)."""
    mark = Text(("*" if row.critical else " ") + ("!" if row.missed else " "))
    if row.missed:
        mark.stylize(palette.bad, 1)
    cells = [cell_text(c, palette) for c in row.cells]
    cells += [Text("")] * (TREND_BUILDS - len(cells))
    name = shown_name(clean(row.name, 120))
    return row.key, [mark, Text(name, no_wrap=True), *cells]


def builds_text(trend: StepTrend, now: float, palette: Palette) -> Text:
    """Which build each column is (`now snoc-think 13:02:11`), and why one has no steps."""
    out = Text(no_wrap=True, overflow="ellipsis")
    out.append(f"{clean(trend.target, 40)} {trend.arch or '-'}", style="bold")
    if not trend.builds:
        out.append(" · no ended build recorded", style=palette.muted)
    missing = []
    for label, build in zip(LABELS, trend.builds, strict=False):
        out.append(f" · {label} ", style=palette.muted)
        # node and start: a job id is dated already, and `t` opens the build itself
        out.append(f"{clean(build.node, 20)} {fmt_when(build.started_at, now)}")
        if build.note is not None:
            out.append(" (no steps)", style=palette.warn)
            missing.append(f"{label}: {clean(build.note, 160)}")
    if trend.more:
        out.append(f" · {trend.more} quicker steps not shown", style=palette.muted)
    if missing:  # a line of its own: the reason is what the operator needs, never cut first
        out.append("\nno steps: " + "; ".join(missing), style=palette.warn)
    return out


class StepTrendPanel(Panel):
    """The steps of the selected target × arch across its last builds."""

    def __init__(self, *, id: str) -> None:
        super().__init__("Steps across the last builds · * critical path · ! cache missed", id=id)
        self.builds = Static("", id="steps-builds", markup=False)
        self.table = SnapshotTable(COLUMNS, id="steps-table", fits=FITS)
        self.trend: StepTrend | None = None

    def compose(self) -> ComposeResult:
        """The builds' line above the steps' table."""
        yield from super().compose()
        yield self.builds
        yield self.table

    def newest_with(self, key: str) -> str | None:
        """The job id of the newest build shown that has the step `key` (None: none)."""
        trend = self.trend
        row = next((r for r in trend.rows if r.key == key), None) if trend else None
        if trend is None or row is None:
            return None
        return next((b.job_id for b, c in zip(trend.builds, row.cells, strict=False)
                     if c.present), None)  # fmt: skip

    def show_note(self, note: str) -> None:
        """A line instead of the trend (reading it, nothing selected, or why it failed)."""
        self.trend = None
        self.builds.update(Text(note))
        self.table.show_rows([])

    def show_trend(self, trend: StepTrend, palette: Palette, now: float | None = None) -> None:
        """Draw `trend`."""
        self.trend = trend
        self.builds.update(builds_text(trend, time.time() if now is None else now, palette))
        self.table.show_rows([trend_row(r, palette) for r in trend.rows])


__all__ = ["StepTrendPanel", "builds_text", "cell_text", "trend_row"]
