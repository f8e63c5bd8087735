"""File lines to strips: read through the index, sanitised and styled once, highlighted, wrapped,
cached.

`LineRenderer` is the hot path while following a fast log (every frame is all new lines): plain
ASCII lines skip Rich's renderer, styled text is cached by line and rendered strips by (line,
look, width), and the wrapped screen is laid out once per frame. It knows nothing of scrolling:
the body (body.py) asks it for a line's strips, or for the wrapped screen from a top row.

How a line looks is decided in three layers, each a style the widget's CSS sets:
- its line class (`LINE_CLASSES`: e.g. a compiler's `error:` or ninja's `FAILED:` line is
  class "error", styled by the component class `logview--line-error`) under everything else;
- its own SGR colours (kept by the sanitiser as styles);
- find highlights, dimming, and the line a jump landed on (`Look`) on top.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.strip import Strip

from rocmtui.console.widgets.logview.cache import LineCache
from rocmtui.core.logs.index import LineIndex
from rocmtui.core.progress.ninja import ERROR_LINE
from rocmtui.core.text.sanitize import styled_line

DISPLAY_CAP = 16384  # bytes of one line read for the screen; the rest is counted, not read
MAX_READ_ON_LOOP = 1 << 20  # a block of lines bigger than this is read in a worker
TEXT_CACHE = 320  # styled lines kept: a few screens at 200x60
STRIP_CACHE = 256  # rendered (highlighted, wrapped) lines kept

# Line classes, first match wins: (name, pattern on the shown text). A class's style is the
# component class `logview--line-NAME` (unstyled unless the CSS gives it one).
LINE_CLASSES: tuple[tuple[str, re.Pattern[str]], ...] = (("error", ERROR_LINE),)


@dataclass
class Look:
    """What decides how lines look beyond their own text (the body sets it)."""

    find: re.Pattern[str] | None = None
    dim: bool = False  # lines without a find match are dimmed
    current_line: int | None = None  # where n/N, e, a line number or a step landed
    wrap: bool = False


@dataclass
class LineStyles:
    """Styles from the widget's CSS, resolved once per paint (they walk the DOM)."""

    base: Style = field(default_factory=Style)
    match: Style = field(default_factory=Style)
    current: Style = field(default_factory=Style)
    landed: Style = field(default_factory=Style)
    dim: Style = field(default_factory=Style)
    marker: Style = field(default_factory=Style)
    line: dict[str, Style] = field(default_factory=dict)  # line class -> style


class Rows(Protocol):
    """The rows the body shows: file lines, or under a filter the matching ones."""

    @property
    def row_count(self) -> int:
        """Rows there are."""

    def line_of_row(self, row: int) -> int:
        """The file line on `row`."""


class LineRenderer:
    """Lines of one `LineIndex` to strips. See the module docstring."""

    def __init__(
        self,
        console: Callable[[], Console],
        on_pending: Callable[[list[int]], None],
        on_wider: Callable[[], None],
        line_classes: Sequence[tuple[str, re.Pattern[str]]] = LINE_CLASSES,
    ) -> None:
        """`console()`: Rich's console to render with; `on_pending(lines)`: lines need a read
        too big for the event loop (do it in a worker, then `forget()`); `on_wider()`: a line
        wider than any before was rendered."""
        self._console = console
        self.index: LineIndex | None = None
        self.look = Look()
        self.styles = LineStyles()
        self.line_classes = tuple(line_classes)
        self.max_width = 0  # widest line rendered unwrapped (cells, capped)
        self._on_pending = on_pending
        self._on_wider = on_wider
        self._pending: set[int] = set()
        self._texts: LineCache[int, tuple[Text, str | None]] = LineCache(TEXT_CACHE)
        self._strips: LineCache[tuple[int, int, int], list[Strip]] = LineCache(STRIP_CACHE)
        self._version = 0  # bumped when the look changes
        self._screen: list[tuple[int, Strip]] = []  # the wrapped layout of the screen ...
        self._screen_key: tuple[int, ...] | None = None  # ... and what it was made for

    # -- caches ----------------------------------------------------------------------------------
    def forget(self) -> None:
        """Drop every cached line (the file was reset, or line numbers moved)."""
        self._texts.clear()
        self._pending.clear()
        self.max_width = 0
        self.restyle()

    def restyle(self) -> None:
        """Lines look different (find, dim, landing, wrap): render them again from their
        cached text."""
        self._version += 1
        self._strips.clear()
        self._screen_key = None

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

    # -- text ----------------------------------------------------------------------------------
    def text(
        self, line: int, window: int = 1, ahead: bool | None = None
    ) -> tuple[Text, str | None]:
        """The styled text of a file line and its line class; on a miss it is read with the
        `window - 1` lines on either side (a screen's worth, in one read), or only after it
        (`ahead` True: a screen drawn from the top down) or only before it (False: from the
        bottom up). Following a fast log every screen is new: the side not drawn was read,
        decoded and styled for nothing."""
        got = self._texts.get(line)
        if got is not None:
            return got
        self._load(line, window, ahead)
        got = self._texts.get(line)
        if got is None:
            self._pending.add(line)
            self._on_pending(sorted(self._pending))
            return Text("…", style=self.styles.marker), None
        return got

    def _load(self, line: int, window: int, ahead: bool | None) -> None:
        index = self.index
        if index is None:
            return
        first = line if ahead else max(0, line - window + 1)
        lines = list(range(first, min(index.line_count, line + (1 if ahead is False else window))))
        lines = lines or [line]
        got = index.read_lines(lines[0], lines[-1] + 1, DISPLAY_CAP, MAX_READ_ON_LOOP)
        if got is None or len(got) != len(lines):
            if len(lines) > 1:  # the screen is too big to read at once: try this line alone
                got = index.read_lines(line, line + 1, DISPLAY_CAP, MAX_READ_ON_LOOP)
                lines = [line]
            if got is None:
                return
        for n, (raw, full) in zip(lines, got, strict=False):
            text = styled_line(raw.decode("utf-8", "replace"))
            text.expand_tabs(8)
            if full > len(raw):
                text.append(f" … [+{full - len(raw):,} bytes]", style=self.styles.marker)
            text.no_wrap = True
            text.end = ""
            self._texts.set(n, (text, self._classify(text.plain)))
            self._pending.discard(n)

    def _classify(self, plain: str) -> str | None:
        for name, pattern in self.line_classes:
            if pattern.search(plain):
                return name
        return None

    def decorated(
        self, line: int, window: int = 1, ahead: bool | None = None
    ) -> tuple[Text, str | None]:
        """The line's text with find highlights (and dimming when it does not match); the line
        a jump landed on stands out whole unless its matches already do."""
        text, line_class = self.text(line, window, ahead)
        look, styles = self.look, self.styles
        matches = []
        if look.find is not None:
            matches = [m.span() for m in look.find.finditer(text.plain) if m.end() > m.start()]
        if line == look.current_line and not matches:
            text = text.copy()
            text.stylize(styles.landed)
            return text, line_class
        if look.find is None:
            return text, line_class
        if not matches:
            if look.dim:
                text = text.copy()
                text.stylize(styles.dim)
            return text, line_class
        text = text.copy()
        style = styles.current if line == look.current_line else styles.match
        for start, end in matches:
            text.stylize(style, start, end)
        return text, line_class

    # -- strips --------------------------------------------------------------------------------
    def strips(
        self, line: int, width: int, window: int = 1, ahead: bool | None = None
    ) -> list[Strip]:
        """The line rendered: one strip, or its wrapped rows at `width`."""
        wrap = self.look.wrap
        key = (line, self._version, width if wrap else 0)
        got = self._strips.get(key)
        if got is not None:
            return got
        text, line_class = self.decorated(line, window, ahead)
        lined = self.styles.line.get(line_class) if line_class is not None else None
        strips = self._render(text, max(1, width), self.styles.base, wrap, lined)
        if not wrap:
            # a plain ASCII line's width is its length; rich's cell_len would also fill its
            # 4096-entry cache with every line followed, and memory would creep
            cells = len(text.plain) if text.plain.isascii() else text.cell_len
            if cells > self.max_width:
                self.max_width = min(cells, DISPLAY_CAP)
                self._on_wider()
        if line not in self._pending:
            self._strips.set(key, strips)
        return strips

    def _render(
        self, text: Text, width: int, base: Style, wrap: bool, lined: Style | None
    ) -> list[Strip]:
        """Text to strips (`lined`: the line class's style, under the text's own). Most
        build-log lines are plain ASCII without colour: those skip Rich's renderer (a frame at
        20k lines/s is all new lines). Wrapping is hard, at the screen's width, so a line's
        rows are easy to count and to read."""
        plain = text.plain
        ascii_ = plain.isascii()  # printable: the sanitiser removed controls, tabs are expanded
        if ascii_ and not text.spans:
            style = base + lined if lined else base
            if not wrap:
                return [Strip([Segment(plain, style)], len(plain))]
            rows = [plain[i : i + width] for i in range(0, len(plain), width)] or [""]
            return [Strip([Segment(r.ljust(width), style)], width) for r in rows]
        console = self._console()
        parts: Iterable[Text]
        if not wrap:
            parts = [text]
        elif ascii_:
            parts = text.divide(range(width, len(plain), width)) if len(plain) > width else [text]
        else:
            parts = text.wrap(console, width, overflow="fold", no_wrap=False)
        out = []
        for part in parts:
            strip = Strip(part.render(console), part.cell_len)
            if lined:
                strip = strip.apply_style(lined)
            out.append(strip.crop_extend(0, width, base) if wrap else strip)
        return out or [Strip.blank(width, base)]

    # -- the wrapped screen ----------------------------------------------------------------------
    def wrapped_screen(
        self, rows: Rows, top: int, at_bottom: bool, size: tuple[int, int], window: int
    ) -> list[tuple[int, Strip]]:
        """(row, strip) for each screen row in wrap mode (`size`: width, height), from row
        `top` down, or when `at_bottom` from the last row up (so the last line is whole on
        screen); laid out once per frame. `window`: as for `text`."""
        key = (top, int(at_bottom), *size, rows.row_count, self._version)
        if self._screen_key != key:
            self._screen = self._lay_out(rows, top, at_bottom, size, window)
            self._screen_key = key
        return self._screen

    def _lay_out(
        self, rows: Rows, top: int, at_bottom: bool, size: tuple[int, int], window: int
    ) -> list[tuple[int, Strip]]:
        width, height = size
        count = rows.row_count
        if at_bottom and count > 0:
            return self._bottom_up(rows, size, window)
        out: list[tuple[int, Strip]] = []
        row = top
        while row < count and len(out) < height:
            line = rows.line_of_row(row)
            out.extend((row, s) for s in self.strips(line, width, window, ahead=True))
            row += 1
        if len(out) < height and top > 0:  # ran out of lines: show the end, screen full
            return self._bottom_up(rows, size, window)
        return out[:height]

    def _bottom_up(self, rows: Rows, size: tuple[int, int], window: int) -> list[tuple[int, Strip]]:
        width, height = size
        out: list[tuple[int, Strip]] = []
        row = rows.row_count - 1
        while row >= 0 and len(out) < height:
            strips = self.strips(rows.line_of_row(row), width, window, ahead=False)
            out[:0] = [(row, s) for s in strips]
            row -= 1
        return out[-height:]
