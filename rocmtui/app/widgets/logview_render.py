"""Rendering the log body's lines: a file line to strips, and the wrapped screen's layout.

A mixin of `LogBody` (kept apart so each module stays readable); it uses the body's caches,
`wrap`, `_look` and `_decorated`. This is the hot path while following a fast log (every frame
is all new lines): plain ASCII lines skip Rich's renderer, rendered lines are cached by
(line, look, width), and the wrapped screen is laid out once per frame.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.geometry import Size
from textual.strip import Strip

if TYPE_CHECKING:
    from textual.scroll_view import ScrollView as _Widget

    from rocmtui.app.widgets.lru import LineCache
else:
    _Widget = object  # at run time a plain mixin: `LogBody` brings the ScrollView

DISPLAY_CAP = 16384  # bytes of one line read for the screen; the rest is counted, not read


class LogBodyRender(_Widget):
    """Lines to strips, and the wrapped layout of the screen, for `LogBody`."""

    # state of `LogBody`, set in its __init__
    wrap: bool
    _pending: set[int]
    _strips: LineCache[tuple[object, ...], list[Strip]]
    _max_width: int
    _look: int
    _base: Style | None
    _screen: list[tuple[int, Strip]]
    _screen_key: tuple[object, ...] | None

    if TYPE_CHECKING:  # defined by `LogBody`

        @property
        def _view(self) -> Size: ...

        @property
        def row_count(self) -> int: ...

        def line_of_row(self, row: int) -> int: ...

        def _decorated(self, line: int) -> Text: ...

        def _set_virtual_size(self, size: Size) -> None: ...

    def _strips_for(self, line: int, width: int) -> list[Strip]:
        """The line rendered: one strip, or its wrapped rows at `width`."""
        key = (line, self._look, width if self.wrap else 0)
        got = self._strips.get(key)
        if got is not None:
            return got
        text = self._decorated(line)
        strips = self._render_text(text, max(1, width), self._base or self.rich_style)
        # a plain ASCII line's width is its length; rich's cell_len would also fill its
        # 4096-entry cache with every line followed, and memory would creep while following
        width_now = len(text.plain) if text.plain.isascii() else text.cell_len
        if not self.wrap and width_now > self._max_width:
            self._max_width = min(width_now, DISPLAY_CAP)
            self.call_later(self._grow_width)
        if line not in self._pending:
            self._strips.set(key, strips)
        return strips

    def _render_text(self, text: Text, width: int, base: Style) -> list[Strip]:
        """Text to strips. Most build-log lines are plain ASCII without colour: those skip
        Rich's renderer (a frame at 20k lines/s is all new lines). Wrapping is hard, at the
        screen's width, so a line's rows are easy to count and to read."""
        plain = text.plain
        ascii_ = plain.isascii()  # printable: the sanitiser removed controls, tabs are expanded
        if ascii_ and not text.spans:
            if not self.wrap:
                return [Strip([Segment(plain, base)], len(plain))]
            rows = [plain[i : i + width] for i in range(0, len(plain), width)] or [""]
            return [Strip([Segment(r.ljust(width), base)], width) for r in rows]
        console = self.app.console
        if not self.wrap:
            return [Strip(text.render(console), text.cell_len)]
        if ascii_:
            parts = text.divide(range(width, len(plain), width)) if len(plain) > width else [text]
        else:
            parts = text.wrap(console, width, overflow="fold", no_wrap=False)
        return [
            Strip(part.render(console), part.cell_len).crop_extend(0, width, base) for part in parts
        ] or [Strip.blank(width, base)]

    def _grow_width(self) -> None:
        """A wider line was seen: let horizontal scrolling reach its end."""
        if not self.wrap and self._max_width > self.virtual_size.width:
            self._set_virtual_size(Size(self._max_width, self.virtual_size.height))

    def _wrapped_screen(self, width: int, height: int) -> list[tuple[int, Strip]]:
        """(row, strip) for each screen row in wrap mode."""
        rows = self.row_count
        top = int(self.scroll_y)
        out: list[tuple[int, Strip]] = []
        if top >= self.max_scroll_y and rows > 0:  # bottom-anchored: the last line is whole
            return self._bottom_screen(width, height)
        row = top
        while row < rows and len(out) < height:
            out.extend((row, s) for s in self._strips_for(self.line_of_row(row), width))
            row += 1
        if len(out) < height and top > 0:  # ran out of lines: show the end, screen full
            return self._bottom_screen(width, height)
        return out[:height]

    def _bottom_screen(self, width: int, height: int) -> list[tuple[int, Strip]]:
        """The wrapped screen laid out from the last line up."""
        out: list[tuple[int, Strip]] = []
        row = self.row_count - 1
        while row >= 0 and len(out) < height:
            strips = self._strips_for(self.line_of_row(row), width)
            out[:0] = [(row, s) for s in strips]
            row -= 1
        return out[-height:]

    def _wrapped_layout(self) -> list[tuple[int, Strip]]:
        """The wrapped screen, laid out once per frame."""
        view = self._view
        key = (int(self.scroll_y), view.width, view.height, self.row_count, self._look)
        if self._screen_key != key:
            self._screen = self._wrapped_screen(view.width, view.height)
            self._screen_key = key
        return self._screen
