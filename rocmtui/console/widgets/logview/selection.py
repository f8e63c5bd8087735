"""Selecting rows of the log view and copying their lines.

`Selection` is the rows from an anchor to a cursor (`v` starts it, up/down move the cursor, `y`
copies); `copy_text()` reads the lines to copy (in a worker: a selection can span a huge file),
each sanitised as on screen, capped in lines and characters.
"""

from __future__ import annotations

from dataclasses import dataclass

from rocmtui.core.logs.index import LineIndex
from rocmtui.core.text.sanitize import sanitize_line

COPY_MAX_LINES = 10_000
COPY_MAX_CHARS = 4 << 20


@dataclass
class Selection:
    """Rows `anchor`..`cursor` (either way round); both None: nothing selected."""

    anchor: int | None = None
    cursor: int | None = None

    @property
    def active(self) -> bool:
        """Whether rows are being selected."""
        return self.anchor is not None and self.cursor is not None

    def start(self, row: int) -> None:
        """Select `row` alone; the cursor moves from there."""
        self.anchor = self.cursor = row

    def clear(self) -> None:
        """Select nothing."""
        self.anchor = self.cursor = None

    def move(self, step: int, rows: int) -> int | None:
        """Move the cursor by `step` within `rows` rows; its new row (None: not selecting)."""
        if self.cursor is None:
            return None
        self.cursor = max(0, min(rows - 1, self.cursor + step))
        return self.cursor

    def span(self) -> tuple[int, int] | None:
        """(first, last) row selected."""
        if self.anchor is None or self.cursor is None:
            return None
        lo, hi = sorted((self.anchor, self.cursor))
        return lo, hi

    def role(self, row: int) -> str | None:
        """ "cursor", "selected" or None for `row`: how it is drawn."""
        span = self.span()
        if span is None:
            return None
        if row == self.cursor:
            return "cursor"
        return "selected" if span[0] <= row <= span[1] else None


def copy_text(index: LineIndex, lines: list[int]) -> tuple[str, int]:
    """The text of `lines` as shown (sanitised), one per line, and how many were taken (at most
    `COPY_MAX_CHARS` characters in all). Reads the file: call it off the event loop."""
    out: list[str] = []
    size = 0
    for line in lines[:COPY_MAX_LINES]:
        got = index.read_lines(line, line + 1, cap=COPY_MAX_CHARS)
        if not got:
            continue
        text = sanitize_line(got[0][0].decode("utf-8", "replace"))
        size += len(text) + 1
        if size > COPY_MAX_CHARS:
            break
        out.append(text)
    return "\n".join(out) + "\n", len(out)
