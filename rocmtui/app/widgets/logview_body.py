"""The scrolling body of the log view: renders only the rows on screen, from the file.

`LogBody` is a Line API `ScrollView`. A row is a file line (or, under a filter, the n-th matching
line). `render_line` reads the visible lines through `LineIndex` (one small read per screen),
turns them into styled, sanitised `Text` only then (`styled_line`), and keeps the results in
LRU caches, so a million-line file costs what one screen costs. Without wrap the virtual size is
(widest line seen, rows); with wrap the scroll unit stays one file line and the rows on screen are
laid out from the top line down (or, at the bottom, from the last line up, so the last line is
always whole on screen when following). Turning a line into strips and laying out the wrapped
screen are the mixin `LogBodyRender` (logview_render).
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left
from collections.abc import Callable
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual import events
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.scrollbar import ScrollTo, ScrollUp
from textual.strip import Strip

from rocmtui.app.widgets import logview_messages as msgs
from rocmtui.app.widgets.logview_render import DISPLAY_CAP, LogBodyRender
from rocmtui.app.widgets.lru import LineCache
from rocmtui.core.logindex import LineIndex
from rocmtui.core.progress_ninja import ERROR_LINE
from rocmtui.core.sanitize import styled_line

MAX_READ_ON_LOOP = 1 << 20  # a block of lines bigger than this is read in a worker
TEXT_CACHE = 320  # styled lines kept: a few screens at 200x60
STRIP_CACHE = 256  # rendered (highlighted, wrapped) lines kept


class LogBody(LogBodyRender, ScrollView, can_focus=True):
    """Rows of a log file, rendered on demand. Owned and driven by `LogView`."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "logview--match",
        "logview--current",
        "logview--landed",
        "logview--dim",
        "logview--selected",
        "logview--cursor",
        "logview--marker",
        "logview--error",
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
    LogBody > .logview--error { color: $text-error; text-style: bold; }
    """

    def __init__(self, on_pending: Callable[[list[int]], None], **kwargs: object) -> None:
        """`on_pending(lines)` is called when lines need a read too big for the event loop."""
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.index: LineIndex | None = None
        self.rows: array[int] | None = None  # file lines shown, when filtered
        self.find: re.Pattern[str] | None = None
        self.dim = False
        self.wrap = False
        self.current_line: int | None = None  # where n/N, e, a line number or a step landed
        self.select_anchor: int | None = None  # selection: rows anchor..cursor
        self.select_cursor: int | None = None
        self.on_user_scroll_up: Callable[[], None] | None = None
        self.on_user_end: Callable[[], None] | None = None
        self.on_view_moved: Callable[[], None] | None = None  # while paused: see watch_scroll_y
        self.stick_to_end = True  # mirrors LogView.follow
        self._on_pending = on_pending
        self._pending: set[int] = set()
        self._texts: LineCache[int, Text] = LineCache(TEXT_CACHE)
        self._strips: LineCache[tuple[object, ...], list[Strip]] = LineCache(STRIP_CACHE)
        self._max_width = 0
        self._auto = False  # a scroll made by the program, not the user
        self._look = 0  # bumped when highlight/dim/selection change what a line looks like
        self._base: Style | None = None  # the widget's style during one paint
        self._screen: list[tuple[int, Strip]] = []  # the wrapped layout of the screen ...
        self._screen_key: tuple[object, ...] | None = None  # ... and what it was made for

    @property
    def _view(self) -> Size:
        """Rows and columns of text on screen (the widget less its scrollbars)."""
        return self.scrollable_content_region.size

    # -- model ---------------------------------------------------------------------------------
    @property
    def row_count(self) -> int:
        """Rows there are to show."""
        if self.rows is not None:
            return len(self.rows)
        return self.index.line_count if self.index is not None else 0

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
        self._texts.clear()
        self._strips.clear()
        self._pending.clear()
        self._max_width = 0
        self.restyle()

    def drop_scrolled_out(self) -> None:
        """Following a fast log, every update brings a new screen: cached lines above it will
        not be looked at again, so memory holds only what is on screen."""
        self._texts.clear()
        self._strips.clear()
        self._screen_key = None
        if self.index is not None:  # nor will the line starts of blocks above it
            self.index.forget_blocks()

    def forget_line(self, line: int) -> None:
        """Drop one line's cached text and renders (the last line, which may have grown)."""
        self._texts.discard(line)
        self._pending.discard(line)
        for key in [k for k in self._strips.keys() if k[0] == line]:  # noqa: SIM118 (LineCache)
            self._strips.discard(key)
        self._screen_key = None

    def restyle(self) -> None:
        """Lines look different (find, dim, selection): re-render them from cached text."""
        self._look += 1
        self._strips.clear()
        self.refresh()

    def sync(self, *, follow: bool, shift: int = 0) -> None:
        """Resize to the rows there are; stick to the bottom when following, else keep the same
        lines on screen (`shift` lines were inserted above them)."""
        rows = self.row_count
        if self.wrap:
            # the scroll unit is a file line; room to put any line at the top of the screen
            size = Size(self._view.width, rows + max(0, self._view.height - 1))
        else:
            size = Size(max(self._max_width, self._view.width), rows)
        self._set_virtual_size(size)
        self._auto = True
        try:
            if follow:
                self.scroll_to(y=self.max_scroll_y, animate=False, immediate=True, force=True)
            elif shift:
                self.scroll_to(y=self.scroll_y + shift, animate=False, immediate=True, force=True)
        finally:
            self._auto = False
        self.refresh()

    def on_resize(self) -> None:
        """Sizes change after the first lines arrive (and on terminal resize): re-stick, and
        have the view say which lines are on screen now (its status line named the old ones)."""
        self._strips.clear()
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
        self._scroll_update(size)

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
        if self.select_cursor is None:
            return False
        self.select_cursor = max(0, min(self.row_count - 1, self.select_cursor + step))
        top = int(self.scroll_y)
        if self.select_cursor < top:
            self.scroll_to_row(self.select_cursor, context=0)
        elif self.select_cursor >= top + self._view.height:
            self.scroll_to_row(self.select_cursor - self._view.height + 1, context=0)
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
        if self.wrap and self.index is not None and self._view.width > 0:
            laid = self._wrapped_layout()
            return range(laid[0][0], laid[-1][0] + 1) if laid else range(0)
        top = int(self.scroll_y)
        return range(top, min(self.row_count, top + max(1, self._view.height)))

    # -- reading and styling -------------------------------------------------------------------
    def _text(self, line: int) -> Text:
        """The styled text of a file line (read with its neighbours on a miss)."""
        text = self._texts.get(line)
        if text is not None:
            return text
        self._load(line)
        text = self._texts.get(line)
        if text is None:
            self._pending.add(line)
            self._on_pending(sorted(self._pending))
            return Text("…", style=self.get_component_rich_style("logview--marker"))
        return text

    def _load(self, line: int) -> None:
        """Read `line` and, when unfiltered, the rest of the screen with it in one read."""
        index = self.index
        if index is None:
            return
        lines = [line]
        if self.rows is None:  # a screen either way: rows are laid out downwards or upwards
            height = max(1, self._view.height)
            lines = list(range(max(0, line - height + 1), min(index.line_count, line + height)))
        got = index.read_lines(lines[0], lines[-1] + 1, DISPLAY_CAP, MAX_READ_ON_LOOP)
        if got is None or len(got) != len(lines):
            if len(lines) > 1:  # the screen is too big to read at once: try this line alone
                got = index.read_lines(line, line + 1, DISPLAY_CAP, MAX_READ_ON_LOOP)
                lines = [line]
            if got is None:
                return
        marker = self.get_component_rich_style("logview--marker")
        error = self.get_component_rich_style("logview--error")
        for n, (raw, full) in zip(lines, got, strict=False):
            text = styled_line(raw.decode("utf-8", "replace"))
            plain = text.plain  # an error line as the progress model finds one: hard to miss
            suspect = "rror" in plain or "FAIL" in plain or "fatal" in plain  # cheap first
            if suspect and ERROR_LINE.search(plain):
                text.stylize(error)
            text.expand_tabs(8)
            if full > len(raw):
                text.append(f" … [+{full - len(raw):,} bytes]", style=marker)
            text.no_wrap = True
            text.end = ""
            self._texts.set(n, text)
            self._pending.discard(n)

    def _decorated(self, line: int) -> Text:
        """The line's text with find highlights (and dimming when it does not match); the line
        a jump landed on stands out whole unless its matches already do."""
        text = self._text(line)
        matches = []
        if self.find is not None:
            matches = [m.span() for m in self.find.finditer(text.plain) if m.end() > m.start()]
        if line == self.current_line and not matches:
            text = text.copy()
            text.stylize(self.get_component_rich_style("logview--landed"))
            return text
        if self.find is None:
            return text
        if not matches:
            if self.dim:
                text = text.copy()
                text.stylize(self.get_component_rich_style("logview--dim"))
            return text
        text = text.copy()
        style = self.get_component_rich_style(
            "logview--current" if line == self.current_line else "logview--match"
        )
        for start, end in matches:
            text.stylize(style, start, end)
        return text

    # -- rendering -----------------------------------------------------------------------------
    def _row_style(self, row: int) -> Style | None:
        """Selection styling for a row, if any."""
        if self.select_anchor is None or self.select_cursor is None:
            return None
        lo, hi = sorted((self.select_anchor, self.select_cursor))
        if row == self.select_cursor:
            return self.get_component_rich_style("logview--cursor")
        if lo <= row <= hi:
            return self.get_component_rich_style("logview--selected")
        return None

    def render_lines(self, crop: Region) -> list[Strip]:
        """Work out the base style once per paint, not once per row (it walks the DOM)."""
        self._base = self.rich_style
        try:
            return super().render_lines(crop)
        finally:
            self._base = None

    def render_line(self, y: int) -> Strip:
        """One screen row (the Line API)."""
        width = self._view.width
        base = self._base or self.rich_style
        if self.index is None or width <= 0:
            return Strip.blank(width, base)
        if self.wrap:
            screen = self._wrapped_layout()
            if y >= len(screen):
                return Strip.blank(width, base)
            row, strip = screen[y]
        else:
            row = int(self.scroll_y) + y
            if row >= self.row_count:
                return Strip.blank(width, base)
            strip = self._strips_for(self.line_of_row(row), width)[0]
            strip = strip.crop_extend(int(self.scroll_x), int(self.scroll_x) + width, base)
        style = self._row_style(row)
        if style is not None:
            strip = strip.apply_style(style)
        return strip

    def screen_text(self) -> list[str]:
        """The plain text of each row on screen (what a test or a copy of the screen sees)."""
        return [strip.text for strip in (self.render_line(y) for y in range(self._view.height))]
