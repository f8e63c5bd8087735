"""The history screen's two plots of one target × arch × node: duration over time, and the
spread of durations per condition. Drawn with textual-plotext.

Chosen over textual-plot on measured start-up cost (bench/RESULTS.md, this machine): importing
textual-plotext after textual.app costs ~0.05-0.08 s, textual-plot ~0.18-0.27 s (it brings
numpy and a canvas package). This module is imported only when the history screen is first
shown, so the console's start-up is unchanged.

Every point is drawn as its condition's letter (F, H, W, C, ?), coloured too: with NO_COLOR
(or on a monochrome terminal) the letters still tell the conditions apart.
"""

from __future__ import annotations

from collections.abc import Sequence

from textual_plotext import PlotextPlot

from rocmtui.core.costbook.cost import CONDITIONS, Condition, CostPoint
from rocmtui.core.history.timeaxis import time_axis

COLOURS = {
    Condition.FROZEN: "blue",
    Condition.HOT: "green",
    Condition.WARM: "orange",
    Condition.COLD: "red",
    Condition.UNKNOWN: "gray",
}


def unit_for(seconds: float) -> tuple[str, float]:
    """The unit durations are drawn in (h, min or s) for a largest value of `seconds`."""
    if seconds >= 2 * 3600:
        return "h", 3600.0
    if seconds >= 120:
        return "min", 60.0
    return "s", 1.0


class CostPlot(PlotextPlot):
    """A plotext plot redrawn from cost points (never from a stale figure)."""

    def _start(self, points: Sequence[CostPoint], title: str) -> tuple[str, float] | None:
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        if not points:
            plt.title(title)
            return None
        unit = unit_for(max(p.duration for p in points))
        # the unit in the title: plotext puts a y label in the bottom-left corner, where two
        # plots side by side read "min   days ago   min" under the axes
        plt.title(f"{title} ({unit[0]})")
        return unit


class DurationPlot(CostPlot):
    """Duration over time (minutes, hours or days before now, whichever fits the span; ticks
    at times of day or dates: `history.timeaxis`), one letter per build."""

    def draw(self, points: Sequence[CostPoint], now: float) -> None:
        """Redraw with `points` (succeeded builds are drawn; the rest are not durations)."""
        done = [p for p in points if p.succeeded]
        unit = self._start(done, "duration over time")
        if unit is not None:
            _, scale = unit
            plt = self.plt
            axis = time_axis(min(p.started_at for p in done), now)
            for condition in CONDITIONS:
                mine = [p for p in done if p.condition is condition]
                if mine:
                    plt.scatter(
                        [axis.x(p.started_at) for p in mine],
                        [p.duration / scale for p in mine],
                        marker=condition.letter,
                        color=COLOURS[condition],
                    )
            plt.xlabel(axis.label)
            if axis.ticks:
                plt.xticks([x for x, _ in axis.ticks], [label for _, label in axis.ticks])
        self.refresh()


class SpreadPlot(CostPlot):
    """Every succeeded build's duration per condition, in a column of its letters."""

    def draw(self, points: Sequence[CostPoint]) -> None:
        """Redraw with `points`."""
        done = [p for p in points if p.succeeded]
        unit = self._start(done, "spread per condition")
        if unit is not None:
            _, scale = unit
            plt = self.plt
            shown = [c for c in CONDITIONS if any(p.condition is c for p in done)]
            for x, condition in enumerate(shown, start=1):
                ys = [p.duration / scale for p in done if p.condition is condition]
                plt.scatter([x] * len(ys), ys, marker=condition.letter, color=COLOURS[condition])
            plt.xticks(list(range(1, len(shown) + 1)), [str(c) for c in shown])
            plt.xlim(0.5, len(shown) + 0.5)
            plt.xlabel("condition")  # a label row as the plot beside it has: axes line up
        self.refresh()
