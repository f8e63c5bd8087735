"""A fleet run drawn: one lane per node, one bar per build from its start to its end (a bake
group's targets built at once: a row each, named at its end).

Renders a `core.runs.chart.Chart` (a snapshot: the screen makes a new one to let a running
build's bar grow) at the widget's width, with `core.runs.scale`, so the text of `rocmtui runs
show` and this chart put bars in the same cells. A bar starts with its mark (F H W C ? by cache
condition, `>` running, `x` failed, `!` stalled), so it reads without colour; colour follows the
history screen's condition colours. Node names and notes are outside text: cleaned.
"""

from __future__ import annotations

from rich.style import Style
from rich.text import Text
from textual.widget import Widget

from rocmtui.console.outside_text import clean
from rocmtui.console.widgets.common import Palette
from rocmtui.core.costbook.cost import Condition
from rocmtui.core.runs.chart import Bar, Chart
from rocmtui.core.runs.scale import mark, row, track_label, tracks
from rocmtui.core.text.units import fmt_age

NAME_MAX = 14
LABEL_MAX = 24  # a row's targets, when a lane is split in rows
FIGURES = 24  # " busy 12m00s idle 12m00s": two ages of at most six characters


def bar_style(bar: Bar, palette: Palette) -> Style:
    """A bar's colour: its state when it failed, stalled or runs; else its condition's."""
    symbol = mark(bar)
    if symbol == "!":
        return palette.alarm
    if symbol == "x":
        return palette.bad
    if symbol == ">":
        return palette.busy
    return {
        Condition.FROZEN: palette.accent,
        Condition.HOT: palette.good,
        Condition.WARM: palette.warn,
        Condition.COLD: palette.bad,
    }.get(bar.build.condition, palette.muted)


def chart_text(chart: Chart | None, width: int, palette: Palette, empty: str) -> Text:
    """The chart as lines of `width` cells (a note under a lane that has one)."""
    out = Text(no_wrap=True, overflow="ellipsis")
    if chart is None:
        out.append(empty, style=palette.muted)
        return out
    names = [clean(lane.node, NAME_MAX) for lane in chart.lanes]
    name_w = max((len(n) for n in names), default=4)
    rows_of = [tracks(lane) for lane in chart.lanes]
    labels = [
        [clean(track_label(t), LABEL_MAX) if len(rs) > 1 else "" for t in rs] for rs in rows_of
    ]
    label_w = max((len(lb) + 1 for ls in labels for lb in ls if lb), default=0)
    cells = max(10, width - name_w - 3 - FIGURES - label_w)
    first = True
    for lane, name, rows, said in zip(chart.lanes, names, rows_of, labels, strict=True):
        for index, track in enumerate(rows):
            if not first:
                out.append("\n")
            first = False
            out.append((name if index == 0 else "").ljust(name_w) + " ", style="bold")
            line = [(" ", Style())] * cells
            for a, b, bar in row(track, chart.wall, cells):
                style = bar_style(bar, palette)
                line[a:b] = [(mark(bar), style)] + [("━", style)] * (b - a - 1)
            out.append("▏", style=palette.muted)
            for char, style in line:
                out.append(char, style=style)
            out.append("▕", style=palette.muted)
            figures = f" busy {fmt_age(lane.busy):>6} idle {fmt_age(lane.idle):>6}"
            out.append((figures if index == 0 else "").ljust(FIGURES), style=palette.muted)
            if said[index]:  # a group's targets built at once: each row says which
                out.append(" " + said[index])
        if lane.note:
            out.append("\n" + " " * (name_w + 2))
            out.append(clean(lane.note, 200), style=palette.warn)
    out.append("\n" + " " * (name_w + 1))
    right = fmt_age(chart.wall)
    out.append("0s".ljust(cells + 2 - len(right)) + right, style=palette.muted)
    return out


class RunChart(Widget):
    """The chart of one run (see the module doc); `draw` gives it a new snapshot."""

    DEFAULT_CSS = "RunChart { height: auto; }"

    def __init__(self, *, id: str) -> None:
        super().__init__(id=id)
        self.chart: Chart | None = None
        self.empty = "no fleet run yet: `rocmtui run TARGET` starts one"
        self._palette: Palette | None = None

    def draw(self, chart: Chart | None, palette: Palette, empty: str | None = None) -> None:
        """Show `chart` (None: the `empty` line); the screen's layout is redone only when the
        chart's height changes (a switch between runs of the same nodes repaints only this)."""
        before = self.lines()
        self.chart, self._palette = chart, palette
        if empty is not None:
            self.empty = empty
        self.refresh(layout=self.lines() != before)

    def lines(self) -> int:
        """A line per lane's row (`tracks`) and per lane note, and the axis."""
        chart = self.chart
        if chart is None:
            return 1
        rows = sum(len(tracks(lane)) for lane in chart.lanes)
        return rows + sum(1 for lane in chart.lanes if lane.note) + 1

    def get_content_height(self, container: object, viewport: object, width: int) -> int:
        """The chart's lines."""
        return self.lines()

    def render(self) -> Text:
        """The chart at the widget's width."""
        palette = self._palette or Palette.from_app(self.app)
        return chart_text(self.chart, self.size.width, palette, self.empty)


class TextBlock(Widget):
    """Lines of rich Text that repaint in place: `Static.update` redoes the whole screen's
    layout on every call; this does only when the number of lines changes."""

    DEFAULT_CSS = "TextBlock { height: auto; }"

    def __init__(self, *, id: str) -> None:
        super().__init__(id=id)
        self._text = Text()

    def show(self, text: Text) -> None:
        """Show `text` (nothing to do when it is what is shown)."""
        old = self._text
        if text.plain == old.plain and text.spans == old.spans:
            return
        self._text = text
        self.refresh(layout=text.plain.count("\n") != old.plain.count("\n"))

    def get_content_height(self, container: object, viewport: object, width: int) -> int:
        """One line per line of text."""
        return self._text.plain.count("\n") + 1 if self._text.plain else 1

    def render(self) -> Text:
        """The text."""
        return self._text


__all__ = ["RunChart", "TextBlock", "bar_style", "chart_text"]
