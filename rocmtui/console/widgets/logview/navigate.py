"""Moving about the log view: to a line, to the next match, selecting rows to copy.

`Navigator` works on the view's body and its searches; the view's keys and public methods call
it. Each move says whether it left the end of the log (the view then stops following) and what
to tell the user when it could not move.
"""

from __future__ import annotations

from rocmtui.console.widgets.logview.body import LogBody
from rocmtui.console.widgets.logview.search import SearchController
from rocmtui.console.widgets.logview.selection import COPY_MAX_LINES


class Navigator:
    """Positions in one log view: lines landed on, matches, the selection."""

    def __init__(self, body: LogBody, search: SearchController) -> None:
        """Move about `body`, with the matches of `search`."""
        self.body = body
        self.search = search

    def top_line(self) -> int:
        """The file line at the top of the screen."""
        rows = self.body.visible_rows()
        return self.body.line_of_row(rows.start) if len(rows) else 0

    def land_on(self, line: int) -> None:
        """Show file `line` (0-based), marked as the line landed on; under a filter, the first
        shown line from it. (The screen may not be able to put the line at its top: the mark
        says which line it is.)"""
        body = self.body
        row = body.row_of_line(max(0, line))
        body.look.current_line = body.line_of_row(row) if body.row_count else None
        body.restyle()
        body.scroll_to_row(row)

    def step_match(self, step: int) -> str | None:
        """Land on the next match of the find (`step` 1) or the previous one (-1), from the line
        landed on or from the screen; None, or why there was nowhere to go."""
        body = self.body
        here = body.look.current_line
        if here is None:  # from the screen: the first line below it, or above it
            rows = body.visible_rows()
            here = body.line_of_row(rows.start if step > 0 else rows.stop - 1) if rows else 0
            here += -1 if step > 0 else 1
        found = self.search.step(here, step)
        if isinstance(found, str):
            return found
        self.land_on(found[1])
        return None

    def select(self) -> None:
        """Start selecting at the line landed on (when on screen) or the last row shown."""
        body = self.body
        rows = body.visible_rows()
        landed = body.look.current_line
        row = body.row_of_line(landed) if landed is not None else None
        if row is None or row not in rows:
            row = rows.stop - 1 if rows else 0
        body.selection.start(row)
        body.restyle()

    def unselect(self) -> bool:
        """End the selection; False when there was none."""
        if not self.body.selection.active:
            return False
        self.body.selection.clear()
        self.body.restyle()
        return True

    def lines_to_copy(self) -> list[int]:
        """File lines of the selection, or of the screen when nothing is selected."""
        body = self.body
        span = body.selection.span()
        if span is None:
            rows = body.visible_rows()
            if not rows:
                return []
            span = rows.start, rows.stop - 1
        lo, hi = span
        return [body.line_of_row(r) for r in range(lo, min(hi, lo + COPY_MAX_LINES - 1) + 1)]
