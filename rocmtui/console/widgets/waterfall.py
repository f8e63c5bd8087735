"""A build's steps as a waterfall: one line per step on a shared time axis, drawn from a
snapshot (`history.stepreport.StepReport`); the screen swaps in a new snapshot as a running
build grows.

Each line: a marker (`*` on the critical path), the step's run time (`cached`, `…` while it
runs), its name (sanitised text, never markup), then its bar: the wait before it started as
`·`, the run as `█` (`▒` for a cached step, `▌` for a zero-width run), positioned on the
axis, so parallel steps sit side by side. The critical path is also drawn in the accent colour;
with NO_COLOR the `*` and the glyphs still tell everything apart. Only the visible lines are
drawn (Textual's line API): a 10,000-step build opens as fast as a 10-step one.
"""

from __future__ import annotations

from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import BindingType
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from rocmtui.console import keys
from rocmtui.console.widgets.common import Palette
from rocmtui.core.history.stepreport import StepReport, StepTime, shown_name
from rocmtui.core.text.units import fmt_seconds, fmt_step_duration

NAME_WIDTH = 34
RUN_WIDTH = 6
PREFIX = 1 + 1 + RUN_WIDTH + 1 + NAME_WIDTH + 2  # marker, run, name, then the bar
HEAD = 1  # the axis line


def bar_cells(step: StepTime, span: float, width: int) -> tuple[int, int, int]:
    """(first cell of the wait, first cell of the run, cells after the run's end) on an axis of
    `width` cells for `span` seconds; a run is at least one cell wide."""
    if step.start is None or width <= 0:
        return (0, 0, 0)
    scale = width / span if span > 0 else 0.0
    run_at = min(int(step.start * scale), width - 1)
    wait_at = max(min(int(max(step.start - step.wait, 0.0) * scale), run_at), 0)
    end = min(max(int((step.start + (step.run or 0.0)) * scale), run_at + 1), width)
    return (wait_at, run_at, end)


def axis_text(span: float, width: int) -> str:
    """The axis: `|0s` at the left, quarter ticks where their labels fit, the span at the
    right."""
    line = [" "] * width
    end = f"{fmt_seconds(span)}|"
    if width < len(end) + 4:
        return "".join(line)
    free_until = width - len(end) - 1  # labels stop a cell short of the span's
    at_least = 0
    for frac in (0.0, 0.25, 0.5, 0.75):
        at = int(frac * width)
        label = f"|{fmt_seconds(span * frac)}"
        if at < at_least or at + len(label) > free_until:
            continue
        line[at : at + len(label)] = label
        at_least = at + len(label) + 1
    line[width - len(end) :] = end
    return "".join(line)


class Waterfall(ScrollView, can_focus=True):
    """The waterfall of one build's steps (see the module doc)."""

    BINDINGS: ClassVar[list[BindingType]] = list(keys.bindings("waterfall"))
    cursor: reactive[int] = reactive(0)

    class Chosen(Message):
        """Enter on a step."""

        def __init__(self, step: StepTime) -> None:
            super().__init__()
            self.step = step

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.report: StepReport | None = None
        self.palette: Palette | None = None

    def show(self, report: StepReport, palette: Palette) -> None:
        """Draw `report` (the cursor stays on the same step when it is still there)."""
        old = self.selected
        self.report, self.palette = report, palette
        self.virtual_size = Size(self.size.width, len(report.steps) + HEAD)
        if old is not None:
            index = next((i for i, s in enumerate(report.steps) if s.digest == old.digest), None)
            if index is not None:
                self.cursor = index
        self.cursor = min(self.cursor, max(len(report.steps) - 1, 0))
        self.refresh()
        self.refresh_bindings()

    @property
    def selected(self) -> StepTime | None:
        """The step under the cursor."""
        report = self.report
        if report is None or not report.steps:
            return None
        return report.steps[min(self.cursor, len(report.steps) - 1)]

    def watch_cursor(self) -> None:
        """Keep the cursor's line in view."""
        top = self.scroll_offset.y
        # the region inside the scrollbars: the last step is never left under one
        height = max(self.scrollable_content_region.height - HEAD, 1)
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False)
        elif self.cursor >= top + height:
            self.scroll_to(y=self.cursor - height + 1, animate=False)
        self.refresh()

    def action_cursor(self, by: int) -> None:
        """Up / down."""
        if self.report is not None and self.report.steps:
            self.cursor = max(0, min(self.cursor + by, len(self.report.steps) - 1))

    def action_page(self, by: int) -> None:
        """Page up / down."""
        self.action_cursor(by * max(self.scrollable_content_region.height - HEAD - 1, 1))

    def action_cursor_to(self, where: int) -> None:
        """Home / end."""
        if self.report is not None and self.report.steps:
            self.cursor = 0 if where == 0 else len(self.report.steps) - 1

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """`⏎ Log at this step` leaves the footer while there is no step to choose (a build
        whose steps cannot be had): there it did nothing."""
        if action == "choose":
            return self.selected is not None
        return True

    def action_choose(self) -> None:
        """Enter: the step's log."""
        step = self.selected
        if step is not None:
            self.post_message(self.Chosen(step))

    def render_line(self, y: int) -> Strip:
        """One line of the view: the axis on top, then the steps from the scroll offset."""
        width = self.scrollable_content_region.width
        report, palette = self.report, self.palette
        if report is None or palette is None:
            return Strip.blank(width)
        bar_width = max(width - PREFIX, 0)
        if y == 0:
            head = " " * PREFIX + axis_text(report.span, bar_width)
            return Strip([Segment(head[:width], palette.muted)], width)
        index = y - HEAD + self.scroll_offset.y
        if index >= len(report.steps):
            return Strip.blank(width)
        step = report.steps[index]
        text = self.step_line(step, report.span, bar_width, palette)
        if index == self.cursor and self.has_focus:
            text.stylize(Style(reverse=True), 0, PREFIX - 2)
        segments = list(text.render(self.app.console))
        return Strip(segments, text.cell_len).crop_extend(0, width, None)

    @staticmethod
    def step_line(step: StepTime, span: float, bar_width: int, palette: Palette) -> Text:
        """One step's line (see the module doc)."""
        line = Text(no_wrap=True)
        style = palette.accent if step.critical else Style()
        line.append("*" if step.critical else " ", style=style)
        if step.cached:
            run = "cached"
        elif step.run is None:
            run = "skew?" if step.skewed else "-"
        else:
            run = fmt_step_duration(step.run).strip() + ("…" if step.open else "")
        line.append(f" {run:>{RUN_WIDTH}} ", style=palette.muted if step.cached else style)
        name = shown_name(step.name)  # BuildKit gave none: said, never a blank line
        name = name if len(name) <= NAME_WIDTH else name[: NAME_WIDTH - 1] + "…"
        line.append(name.ljust(NAME_WIDTH), style=palette.bad if step.error else style)
        line.append("  ")
        wait_at, run_at, end = bar_cells(step, span, bar_width)
        if step.start is not None:
            line.append(" " * wait_at)
            line.append("·" * (run_at - wait_at), style=palette.muted)
            glyph = "▒" if step.cached else "█"
            bar_style = palette.muted if step.cached else palette.bad if step.error else style
            line.append(glyph * (end - run_at), style=bar_style)
        return line


__all__ = ["Waterfall", "axis_text", "bar_cells"]
