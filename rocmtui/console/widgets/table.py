"""The fleet screen's tables: rows of rich `Text` cells drawn one line at a time.

Textual's DataTable did the job, and cost the first frame ~0.15 s: four of them, each with ten
component classes to style and a render path built for editable, sortable grids. The fleet's
tables are simpler: rows keyed by node name or job id, fixed columns, a row cursor. Here each
row is drawn as one strip (cached until its cells change) and only the rows whose cells
changed are repainted, which is what keeps an idle console under 2 KB/s over ssh.

Keys: up/down, page up/down, home/end move the cursor; left/right scroll a column at a time;
enter (or a click on the row under the cursor) posts `RowSelected`. The header stays on the
first line when the rows scroll; a resize scrolls back to the first column.

A table given `fits` (one `Fit` per column) fits its room instead of scrolling: a column is
never wider than its `max`; then, turn by turn, flexible columns shrink to their `min` (a cut
cell ends in `…`) and droppable ones are hidden, and last the widest give way; columns with
no turn (the jobs' state and id) stay whole on screen at every width.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import ClassVar

from msgspec import Struct
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import BindingType
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from rocmtui.console import keys

Row = tuple[str, Sequence[Text]]


class Fit(Struct, frozen=True):
    """How a column gives way to the table's room (see the module doc)."""

    min: int = 0  # a flexible column shrinks to this at its turn (0: never shrinks)
    max: int = 0  # never wider than this (0: as wide as its widest cell)
    drop: bool = False  # at its turn, hidden instead
    turn: int = 0  # columns give way in rising turns until the table fits


SHRINK_AFTER = 8  # cells: a column this much wider than anything it holds is fitted again
HEADER = -1  # the header's index in the strip cache
CUT_FLOOR = 4  # cells a flexible column keeps when nothing else can give way


def _same(a: Text, b: Text) -> bool:
    """Whether two cells would paint the same (rich's `Text ==` ignores the base style)."""
    return a.plain == b.plain and a.style == b.style and a.spans == b.spans


def _blank_shows(style: Style | None) -> object:
    """What a space in `style` looks like: its background, and marks that show on a blank."""
    if style is None:
        return None
    marks = (style.underline, style.underline2, style.overline, style.strike, style.reverse)
    return style.bgcolor, tuple(bool(mark) for mark in marks)


def _runs(segments: Iterable[Segment]) -> list[Segment]:
    """One segment per run of one style, each run's leading spaces moved to the run before.

    Each segment costs its own colour codes on the wire. And SVG renderers that drop a text
    run's leading spaces (rsvg, which turns the screenshots into PNGs) shifted every column
    after one: a gap, or a span such as " gfx1201" after a bold target. Spaces move only where
    both styles look the same on a blank (the same background; no underline, reverse, strike).
    """
    out: list[Segment] = []
    for segment in segments:
        text, style = segment.text, segment.style
        if out and text.startswith(" ") and _blank_shows(style) == _blank_shows(out[-1].style):
            body = text.lstrip(" ")
            out[-1] = Segment(out[-1].text + text[: len(text) - len(body)], out[-1].style)
            text = body
        if not text:
            continue
        if out and out[-1].style == style:
            out[-1] = Segment(out[-1].text + text, style)
        else:
            out.append(Segment(text, style))
    return out


class SnapshotTable(ScrollView, can_focus=True):
    """A table filled from a list of keyed rows; the cursor stays on its key across refreshes."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"snapshot-table--header", "snapshot-table--cursor"}
    BINDINGS: ClassVar[list[BindingType]] = list(keys.bindings("table"))

    class RowSelected(Message):
        """Enter (or a click) on a row: `key` is the row's key."""

        def __init__(self, table: SnapshotTable, key: str) -> None:
            super().__init__()
            self.table = table
            self.key = key

        @property
        def control(self) -> SnapshotTable:
            """The table the row is in."""
            return self.table

    def __init__(
        self, columns: Sequence[str], *, id: str | None = None, fits: Sequence[Fit] = ()
    ) -> None:
        super().__init__(id=id)
        self._labels = tuple(Text(name, no_wrap=True) for name in columns)
        self._fits = tuple(fits)
        self._keys: list[str] = []
        self._rows: list[tuple[Text, ...]] = []
        self._widths = [label.cell_len for label in self._labels]  # as wide as their cells
        self._shown = list(enumerate(self._widths))  # (column, width) as drawn
        self._strips: dict[int, Strip] = {}  # row index (HEADER: the header) -> uncropped line
        self._cursor = 0
        self._room = 0  # the width last fitted
        self.virtual_size = Size(self._line_width(), 1)

    # ------------------------------------------------------------------ data

    @property
    def row_keys(self) -> list[str]:
        """Keys of the rows in display order."""
        return list(self._keys)

    @property
    def row_count(self) -> int:
        """How many rows the table holds."""
        return len(self._rows)

    def get_row_at(self, index: int) -> tuple[Text, ...]:
        """The cells of row `index`."""
        return self._rows[index]

    @property
    def cursor_row(self) -> int:
        """The index of the row under the cursor."""
        return self._cursor

    @property
    def selected_key(self) -> str | None:
        """The key of the row under the cursor."""
        if not self._keys:
            return None
        return self._keys[min(max(self._cursor, 0), len(self._keys) - 1)]

    def show_rows(self, rows: Sequence[Row]) -> None:
        """Make the table show exactly `rows`, touching as little of the screen as possible."""
        keys = [key for key, _ in rows]
        cells = [tuple(row) for _, row in rows]
        widths = self._fit(cells)
        shown = self._layout(widths)
        if keys != self._keys or widths != self._widths or shown != self._shown:
            selected = self.selected_key
            self._keys, self._rows, self._widths, self._shown = keys, cells, widths, shown
            self._strips.clear()
            if selected in keys:
                self._cursor = keys.index(selected)
            self._cursor = min(self._cursor, max(0, len(keys) - 1))
            size = Size(self._line_width(), len(keys) + 1)
            if size != self.virtual_size:
                self.virtual_size = size  # re-runs the layout: the table's height follows
            self._scroll_to_cursor()
            self.refresh()
            return
        for index, (old, new) in enumerate(zip(self._rows, cells, strict=True)):
            if len(old) != len(new) or not all(map(_same, old, new)):
                self._rows[index] = new
                self._strips.pop(index, None)
                self._refresh_row(index)

    def _fit(self, rows: Sequence[tuple[Text, ...]]) -> list[int]:
        """Column widths for `rows`: grown at once, shrunk only when far too wide (a long text
        went away), so a counter that gains a digit repaints its row, not the table."""
        needed = [label.cell_len for label in self._labels]
        for cells in rows:
            for index, cell in enumerate(cells[: len(needed)]):
                needed[index] = max(needed[index], cell.cell_len)
        old = self._widths
        if any(n > w for n, w in zip(needed, old, strict=True)) or any(
            w > n + SHRINK_AFTER for n, w in zip(needed, old, strict=True)
        ):
            return needed
        return old

    def _layout(self, widths: list[int]) -> list[tuple[int, int]]:
        """(column, width) of the columns drawn: all of them as wide as they need, or, with
        `fits` and a known room, what fits it (see the module doc)."""
        room = self.scrollable_content_region.width
        if not self._fits or room <= 0:
            return list(enumerate(widths))
        fits = self._fits
        want = {i: min(w, fits[i].max) if fits[i].max else w for i, w in enumerate(widths)}
        excess = sum(w + 2 for w in want.values()) - room
        # columns give way in their turns: a flexible one shrinks to its min, a droppable one
        # is hidden; when that is not enough, the widest gives a cell at a time (a cut cell
        # still shows its start)
        natural = dict(want)
        turns = sorted((i for i, f in enumerate(fits) if f.turn), key=lambda i: fits[i].turn)
        for column in turns:
            if excess <= 0:
                break
            if fits[column].drop:
                excess -= want.pop(column) + 2
            elif fits[column].min:
                give = min(excess, max(0, want[column] - fits[column].min))
                want[column] -= give
                excess -= give
        for column in reversed(turns):  # a column hidden late left room: the last cut get it
            if excess >= 0:
                break
            if column in want:
                back = min(-excess, natural[column] - want[column])
                want[column] += back
                excess += back
        while excess > 0:
            column = max(want, key=lambda i: want[i] if fits[i].min else -1)
            if not fits[column].min or want[column] <= CUT_FLOOR:
                break
            want[column] -= 1
            excess -= 1
        return sorted(want.items())

    def _line_width(self) -> int:
        return sum(width + 2 for _, width in self._shown)

    def on_resize(self) -> None:
        """A new width: fit it, and start again from the first column (an offset kept from a
        wider or narrower screen showed a column cut in its middle). A new height (a row
        more) changes neither."""
        width = self.size.width
        if width == self._room:
            return
        self._room = width
        shown = self._layout(self._widths)
        if shown != self._shown:
            self._shown = shown
            self._strips.clear()
            self.virtual_size = Size(self._line_width(), len(self._keys) + 1)
            self.refresh()
        self.scroll_to(x=0, animate=False)

    # ------------------------------------------------------------------ drawing

    def notify_style_update(self) -> None:
        """Theme or focus changed: every cached line has the old colours."""
        super().notify_style_update()
        self._strips.clear()

    def _strip(self, index: int) -> Strip:
        """Row `index` (or the header) as one uncropped line, in the table's base style."""
        strip = self._strips.get(index)
        if strip is not None:
            return strip
        console = self.app.console
        base = self.rich_style
        if index == HEADER:
            cells: Sequence[Text] = self._labels
            base += self.get_component_rich_style("snapshot-table--header")
        else:
            cells = self._rows[index]
        segments: list[Segment] = []
        shown = [(column, width) for column, width in self._shown if column < len(cells)]
        for place, (column, width) in enumerate(shown):
            cell = cells[column]
            if "\n" in cell.plain:  # a cell is one line, whatever it was given
                cell = cell.split("\n")[0]
            if cell.cell_len > width:  # cut to the column, and say so
                cell = cell.copy()
                cell.truncate(width, overflow="ellipsis")
            if cell.spans:  # rich lays the cell's own style under its spans
                segments.extend(cell.render(console, end=""))
            else:  # ... and leaves it out when there are none
                segments.append(Segment(cell.plain, console.get_style(cell.style)))
            last = place == len(shown) - 1
            segments.append(Segment(" " * (width - cell.cell_len + (1 if last else 2))))
        # The row's first space is in the plain style: the header's text starts a run of its own
        lead = Segment(" ", self.rich_style)
        strip = Strip(_runs([lead, *Segment.apply_style(segments, base)]), self._line_width())
        self._strips[index] = strip
        return strip

    def render_line(self, y: int) -> Strip:
        """Line `y` of the widget: the header, then the rows from the scroll position; the
        cursor's colours go over the row's own, across the whole width."""
        scroll_x, scroll_y = self.scroll_offset
        width = self.size.width
        index = HEADER if y == 0 else scroll_y + y - 1
        base = self.rich_style
        if index >= len(self._rows):
            return Strip.blank(width, base)
        strip = self._strip(index).crop_extend(scroll_x, scroll_x + width, base)
        if index == self._cursor and index != HEADER:
            cursor = self.get_component_rich_style("snapshot-table--cursor")
            strip = Strip(Segment.apply_style(list(strip), post_style=cursor), width)
        return strip

    def _refresh_row(self, index: int) -> None:
        """Repaint one row, if it is on screen."""
        y = index - round(self.scroll_offset.y) + 1
        if 1 <= y < self.size.height:
            self.refresh(Region(0, y, self.size.width, 1))

    # ------------------------------------------------------------------ cursor

    def move_cursor(self, row: int) -> None:
        """Put the cursor on row `row` (clamped) and scroll it into view."""
        row = min(max(row, 0), max(0, len(self._rows) - 1))
        if row == self._cursor:
            return
        old, self._cursor = self._cursor, row
        self._refresh_row(old)
        self._refresh_row(row)
        self._scroll_to_cursor()

    def _scroll_to_cursor(self) -> None:
        visible = max(1, self.size.height - 1)  # below the header
        top = round(self.scroll_offset.y)
        if self._cursor < top:
            self.scroll_to(y=self._cursor, animate=False)
        elif self._cursor >= top + visible:
            self.scroll_to(y=self._cursor - visible + 1, animate=False)

    def action_cursor(self, step: int) -> None:
        """Up / down."""
        self.move_cursor(self._cursor + step)

    def action_page(self, pages: int) -> None:
        """Page up / down."""
        self.move_cursor(self._cursor + pages * max(1, self.size.height - 2))

    def action_cursor_to(self, row: int) -> None:
        """First (0) or last (-1) row."""
        self.move_cursor(len(self._rows) - 1 if row < 0 else row)

    def action_columns(self, step: int) -> None:
        """Scroll left or right to the previous or next column's start."""
        starts, x = [], 0
        for _, width in self._shown:
            starts.append(x)
            x += width + 2
        now = round(self.scroll_offset.x)
        if step > 0:
            target = next((s for s in starts if s > now), now)
        else:
            target = max((s for s in starts if s < now), default=0)
        self.scroll_to(x=target, animate=False)

    def action_select(self) -> None:
        """Enter: the row under the cursor is chosen."""
        key = self.selected_key
        if key is not None:
            self.post_message(self.RowSelected(self, key))

    def on_click(self, event: events.Click) -> None:
        """A click moves the cursor to the row; a click on the cursor's row chooses it."""
        if event.y < 1:
            return
        row = round(self.scroll_offset.y) + event.y - 1
        if row >= len(self._rows):
            return
        if row == self._cursor:
            self.action_select()
        else:
            self.move_cursor(row)
