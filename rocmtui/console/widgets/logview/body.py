"""The scrolling body of the log view: only the rows on screen are rendered, from the file.

`LogBody` is a Line API `ScrollView`. A row is a file line (or, under a filter, the n-th matching
line). Its `LineRenderer` (render.py) reads the visible lines through the `LineIndex` (one small
read per screen) and turns them into strips, so a million-line file costs what one screen costs.
Without wrap the virtual size is (widest line seen, rows); with wrap the scroll unit stays one
file line and the rows on screen are laid out from the top line down (or, at the bottom, from
the last line up, so the last line is always whole on screen when following).

The body reports user scrolling through callbacks its `LogView` sets (up stops follow mode, end
starts it) and, in selection mode, moves a cursor row instead of scrolling.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Callable
from typing import ClassVar

from rich.style import Style
from textual import events, work
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.scrollbar import ScrollTo, ScrollUp
from textual.strip import Strip

from rocmtui.console import textual_private
from rocmtui.console.widgets.logview import messages as msgs
from rocmtui.console.widgets.logview.render import LineRenderer, LineStyles
from rocmtui.console.widgets.logview.selection import Selection
from rocmtui.core.logs.index import LineIndex


class LogBody(ScrollView, can_focus=True):
    """Rows of a log file, rendered on demand. Owned and driven by `LogView`."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "logview--match",
        "logview--current",
        "logview--landed",
        "logview--dim",
        "logview--selected",
        "logview--cursor",
        "logview--marker",
        "logview--line-error",  # a line of class "error" (render.py's LINE_CLASSES)
    }

    DEFAULT_CSS = """
    LogBody {
        background: $surface; color: $foreground; overflow-x: scroll; overflow-y: scroll;
        scrollbar-size-vertical: 0; scrollbar-size-horizontal: 0;
    }
    LogBody > .logview--match { background: $warning 40%; }
    LogBody > .logview--current { background: $accent; color: $text; text-style: bold; }
    LogBody > .logview--landed { background: $accent 35%; text-style: bold underline; }
    LogBody > .logview--dim { text-style: dim; }
    LogBody > .logview--selected { background: $primary 50%; }
    LogBody > .logview--cursor { background: $primary; }
    LogBody > .logview--marker { color: $text-muted; text-style: italic; }
    """

    def __init__(
        self, *, name: str | None = None, id: str | None = None, classes: str | None = None
    ) -> None:
        """An empty body (the view gives it an index to show)."""
        super().__init__(name=name, id=id, classes=classes)
        self.renderer = LineRenderer(lambda: self.app.console, self._need_lines, self._wider)
        self.look = self.renderer.look  # find, dim, the line landed on, wrap
        self.rows: array[int] | None = None  # file lines shown, when filtered
        self.selection = Selection()
        self.on_user_scroll_up: Callable[[], None] | None = None
        self.on_user_end: Callable[[], None] | None = None
        self.on_view_moved: Callable[[], None] | None = None  # while paused: see watch_scroll_y
        self.stick_to_end = True  # mirrors LogView.follow
        self._auto = False  # a scroll made by the program, not the user
        self._seen_prepended = 0  # lines the index's backward scan had put in front
        self._warming = False  # a worker reads lines too big to read on the event loop
        self._styled = False  # the renderer has the styles of the last paint
        # during one paint: the text area's size and the wrapped screen, worked out once for
        # all its rows (the region walks the scrollbar gutter; ~20% of a frame, row by row)
        self._paint: tuple[Size, list[tuple[int, Strip]] | None] | None = None

    @property
    def wrap(self) -> bool:
        """Whether long lines wrap (the look's `wrap`)."""
        return self.look.wrap

    @property
    def _view(self) -> Size:
        """Rows and columns of text on screen (the widget less its scrollbars)."""
        paint = self._paint
        return paint[0] if paint is not None else self.scrollable_content_region.size

    # -- rows -----------------------------------------------------------------------------------
    @property
    def row_count(self) -> int:
        """Rows there are to show."""
        if self.rows is not None:
            return len(self.rows)
        index = self.renderer.index
        return index.line_count if index is not None else 0

    def line_of_row(self, row: int) -> int:
        """The file line shown on `row`."""
        return self.rows[row] if self.rows is not None else row

    def row_of_line(self, line: int) -> int:
        """The row showing `line`, or under a filter the first row at or after it."""
        if self.rows is None:
            return line
        return min(bisect_left(self.rows, line), max(0, len(self.rows) - 1))

    def forget(self) -> None:
        """Drop every cached line (the file was reset, or line numbers moved)."""
        self.renderer.forget()
        self.refresh()

    def restyle(self) -> None:
        """Lines look different (find, dim, selection): re-render them from cached text."""
        self.renderer.restyle()
        self.refresh()

    def sync(self, *, follow: bool, shift: int = 0, changed_from: int = 0) -> None:
        """Resize to the rows there are; stick to the bottom when following, else keep the same
        lines on screen (`shift` lines were inserted above them). Rows before `changed_from`
        are as they were: when none of the others is on screen, nothing is painted (a paused
        view of a growing log stays still, and sends the terminal nothing)."""
        rows = self.row_count
        view = self._view
        if self.wrap:
            # the scroll unit is a file line; room to put any line at the top of the screen
            size = Size(view.width, rows + max(0, view.height - 1))
        else:
            size = Size(max(self.renderer.max_width, view.width), rows)
        self._set_virtual_size(size)
        top = self.scroll_y
        self._auto = True
        try:
            if follow:
                self.scroll_to(y=self.max_scroll_y, animate=False, immediate=True, force=True)
            elif shift:
                self.scroll_to(y=self.scroll_y + shift, animate=False, immediate=True, force=True)
        finally:
            self._auto = False
        still = self.scroll_y == top and not self.wrap and changed_from >= top + view.height
        if not still:
            self.refresh()

    def show_file(self, index: LineIndex | None, follow: bool) -> None:
        """Show another index (or none): from its end, or from its top when not following."""
        self.renderer.index = index
        self._seen_prepended = index.prepended if index is not None else 0
        self.forget()
        if index is not None:
            self.sync(follow=True)
            if not follow:
                self.scroll_to_row(0, context=0)

    def show_reset(self, rows: array[int] | None, follow: bool) -> None:
        """The file was truncated or replaced: nothing cached holds; `rows` is the new filter's
        (None: unfiltered)."""
        self.forget()
        self.look.current_line = None  # the line a jump landed on is gone
        self._seen_prepended = 0
        self.rows = rows
        self.sync(follow=follow)

    def show_growth(self, before: int, follow: bool, open_line: bool = True) -> None:
        """The file grew from `before` lines; the last of them too when it was `open_line`
        (no newline yet). Rows before the first that changed are not painted again."""
        index = self.renderer.index
        if index is None:
            return
        if follow and index.line_count - before >= self.size.height:
            self.renderer.drop_scrolled_out()
        elif open_line:
            self.renderer.forget_line(before - 1)
        first = max(0, before - 1) if open_line else before
        self.show_more(follow, changed_from=self.row_of_line(first))

    def show_more(self, follow: bool, changed_from: int = 0) -> None:
        """The index or a filter has more rows (`changed_from`: the first that may differ);
        lines the backward scan put in front move every row down by that much."""
        index = self.renderer.index
        if index is None:
            return
        shift = index.prepended - self._seen_prepended
        self._seen_prepended = index.prepended
        if self.rows is not None:
            shift = changed_from = 0  # a search's new rows may land anywhere on screen
        elif shift:
            self.forget()
        self.sync(follow=follow, shift=shift, changed_from=changed_from + shift)

    def _need_lines(self, lines: list[int]) -> None:
        """The renderer met lines too big to read on the event loop: read them in a worker."""
        if not self._warming and self.renderer.index is not None:
            self._warming = True
            self._warm_worker(self.renderer.index, lines[:64])

    @work(thread=True, group="logview-warm", exit_on_error=False)
    def _warm_worker(self, index: LineIndex, lines: list[int]) -> None:
        try:
            for line in lines:
                if line < index.line_count:
                    index.spans(line, line + 1)  # the index remembers their blocks
        finally:
            self.app.call_from_thread(self._warmed)

    def _warmed(self) -> None:
        self._warming = False
        self.forget()

    def on_resize(self) -> None:
        """Sizes change after the first lines arrive (and on terminal resize): re-stick, and
        have the view say which lines are on screen now (its status line named the old ones)."""
        self.renderer.restyle()
        self.sync(follow=self.stick_to_end)
        self.post_message(msgs.Update())

    def _set_virtual_size(self, size: Size) -> None:
        """Change the scrollable size without a layout pass of the whole screen. Both
        scrollbars are always shown (CSS), so the widget's own geometry cannot change; a
        layout pass per update re-rendered every widget and cost ~30 ms a frame while
        following a fast log."""
        if size == self.virtual_size:
            return
        if not self.is_mounted or not self.size:
            self.virtual_size = size
            return
        self.set_reactive(LogBody.virtual_size, size)
        textual_private.update_scroll(self, size)

    def _wider(self) -> None:
        self.call_later(self._grow_width)

    def _grow_width(self) -> None:
        """A wider line was seen: let horizontal scrolling reach its end."""
        width = self.renderer.max_width
        if not self.wrap and width > self.virtual_size.width:
            self._set_virtual_size(Size(width, self.virtual_size.height))

    def scroll_to_row(self, row: int, *, context: int | None = None) -> None:
        """Bring `row` on screen with `context` rows above it (a third of the screen)."""
        if context is None:
            context = max(0, self._view.height // 3)
        self._auto = True
        try:
            self.scroll_to(y=max(0, row - context), animate=False, immediate=True, force=True)
        finally:
            self._auto = False

    # -- user scrolling: up stops follow mode, end starts it, selection moves the cursor --------
    def _user_up(self) -> None:
        if self.on_user_scroll_up is not None:
            self.on_user_scroll_up()

    def _move_cursor(self, step: int) -> bool:
        """In selection mode, move the cursor row instead of scrolling."""
        cursor = self.selection.move(step, self.row_count)
        if cursor is None:
            return False
        top = int(self.scroll_y)
        if cursor < top:
            self.scroll_to_row(cursor, context=0)
        elif cursor >= top + self._view.height:
            self.scroll_to_row(cursor - self._view.height + 1, context=0)
        self.restyle()
        return True

    def action_scroll_up(self) -> None:
        """Up: one line (or the selection cursor)."""
        if not self._move_cursor(-1):
            self._user_up()
            super().action_scroll_up()

    def action_scroll_down(self) -> None:
        """Down: one line (or the selection cursor)."""
        if not self._move_cursor(1):
            super().action_scroll_down()

    def action_page_up(self) -> None:
        """Page up (or the selection cursor by a page)."""
        if not self._move_cursor(-max(1, self._view.height - 1)):
            self._user_up()
            super().action_page_up()

    def action_page_down(self) -> None:
        """Page down (or the selection cursor by a page)."""
        if not self._move_cursor(max(1, self._view.height - 1)):
            super().action_page_down()

    def action_scroll_home(self) -> None:
        """Home: the first line."""
        self._user_up()
        super().action_scroll_home()

    def action_scroll_end(self) -> None:
        """End: the last line, following again."""
        if self.on_user_end is not None:
            self.on_user_end()

    # Textual's private scroll handlers, overridden (listed in rocmtui.console.textual_private.USES)
    def _on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        self._user_up()
        super()._on_mouse_scroll_up(event)

    def _on_scroll_up(self, event: ScrollUp) -> None:
        self._user_up()
        super()._on_scroll_up(event)

    def _on_scroll_to(self, message: ScrollTo) -> None:
        if message.y is not None and message.y < self.scroll_y:
            self._user_up()
        super()._on_scroll_to(message)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        """A scroll while paused (keys, mouse, a jump) moves the lines on screen: say so. While
        following, the tail's own update already does, once per batch of lines."""
        super().watch_scroll_y(old_value, new_value)
        moved = int(old_value) != int(new_value)  # whole rows, as visible_rows counts them
        if moved and not self.stick_to_end and self.on_view_moved is not None:
            self.on_view_moved()

    def visible_rows(self) -> range:
        """Rows whose lines are (at least partly) on screen."""
        if self.wrap and self.renderer.index is not None and self._view.width > 0:
            laid = self._wrapped()
            return range(laid[0][0], laid[-1][0] + 1) if laid else range(0)
        top = int(self.scroll_y)
        return range(top, min(self.row_count, top + max(1, self._view.height)))

    # -- rendering -------------------------------------------------------------------------------
    def _styles(self) -> LineStyles:
        style = self.get_component_rich_style
        line = {"error": style("logview--line-error", partial=True)}
        return LineStyles(
            base=self.rich_style,
            match=style("logview--match"),
            current=style("logview--current"),
            landed=style("logview--landed"),
            dim=style("logview--dim"),
            marker=style("logview--marker"),
            line={name: s for name, s in line.items() if s},
        )

    def _window(self) -> int:
        """Lines read with a missing one: a screen's worth either way, unless filtered."""
        return max(1, self._view.height) if self.rows is None else 1

    def _wrapped(self) -> list[tuple[int, Strip]]:
        view = self._view
        top = int(self.scroll_y)
        at_bottom = top >= self.max_scroll_y
        if not self._styled:
            self._restyle_renderer()
        size = (view.width, view.height)
        return self.renderer.wrapped_screen(self, top, at_bottom, size, self._window())

    def _row_style(self, row: int) -> Style | None:
        """Selection styling for a row, if any."""
        role = self.selection.role(row)
        return self.get_component_rich_style(f"logview--{role}") if role else None

    def _restyle_renderer(self) -> None:
        self.renderer.styles = self._styles()
        self._styled = True

    def render_lines(self, crop: Region) -> list[Strip]:
        """Work out the styles, the text area and the wrapped screen once per paint, not once
        per row (they walk the DOM)."""
        self._restyle_renderer()
        view = self.scrollable_content_region.size
        self._paint = (view, None)
        try:
            if self.wrap and self.renderer.index is not None and view.width > 0:
                self._paint = (view, self._wrapped())
            return super().render_lines(crop)
        finally:
            self._paint = None

    def render_line(self, y: int) -> Strip:
        """One screen row (the Line API)."""
        width = self._view.width
        if not self._styled:
            self._restyle_renderer()
        base = self.renderer.styles.base
        if self.renderer.index is None or width <= 0:
            return Strip.blank(width, base)
        if self.wrap:
            paint = self._paint
            screen = paint[1] if paint is not None and paint[1] is not None else self._wrapped()
            if y >= len(screen):
                return Strip.blank(width, base)
            row, strip = screen[y]
        else:
            row = int(self.scroll_y) + y
            if row >= self.row_count:
                return Strip.blank(width, base)
            line = self.line_of_row(row)
            strip = self.renderer.strips(line, width, self._window(), ahead=True)[0]
            strip = strip.crop_extend(int(self.scroll_x), int(self.scroll_x) + width, base)
        style = self._row_style(row)
        if style is not None:
            strip = strip.apply_style(style)
        return strip

    def screen_text(self) -> list[str]:
        """The plain text of each row on screen (what a test or a copy of the screen sees)."""
        return [strip.text for strip in (self.render_line(y) for y in range(self._view.height))]
