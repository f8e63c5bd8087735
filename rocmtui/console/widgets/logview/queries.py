"""Find, filter and the jumps of one log view: the queries, and what their searches found.

A query's pattern is compiled here (a bad one is said, not raised), the body's look and rows
are set from it, and its search starts on the `SearchController`'s threads; the find and
filter state is told up as `FindChanged` and `FilterChanged`. The view keeps the public
methods and keys that ask for a query, and the handlers that hear a search end.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from textual.widget import Widget

from rocmtui.console.widgets.logview import messages as msgs
from rocmtui.console.widgets.logview.body import LogBody
from rocmtui.console.widgets.logview.navigate import Navigator
from rocmtui.console.widgets.logview.search import SearchController
from rocmtui.core.logs.search import compile_query
from rocmtui.core.progress.ninja import ERROR_LINE


class LogQueries:
    """The find, the filter and the jumps of one `LogView` (see the module docstring)."""

    def __init__(
        self,
        view: Widget,
        body: LogBody,
        search: SearchController,
        navigator: Navigator,
        follow: Callable[[], bool],
        status: Callable[[], None],
    ) -> None:
        """`view` says a bad pattern and sends the messages (as their sender); `follow` is its
        follow mode now, `status` redraws its status line."""
        self._view = view
        self.body = body
        self.search = search
        self.navigator = navigator
        self._follow = follow
        self._status = status

    def find(self, text: str | None, *, regex: bool = True, case: bool | None = None) -> None:
        """Highlight `text` everywhere (`None` clears); n/N then walk the matches. A search
        still running for an older find sees it was replaced and stops."""
        pattern = self._compile(text, regex, case) if text else None
        if text and pattern is None:
            return
        self.body.look.current_line = None
        self.body.look.find = pattern
        self.body.restyle()
        if text and pattern is not None:
            self.search.set_find(text, pattern)
            return
        self.search.clear_find()
        self._view.post_message(msgs.FindChanged(self._view, None, 0, None, True))
        self._status()

    def set_filter(
        self,
        text: str | None,
        *,
        invert: bool = False,
        regex: bool = True,
        case: bool | None = None,
    ) -> None:
        """Show only the lines matching `text` (or with `invert`, the others); None: all. A
        search still running for an older filter sees it was replaced and stops."""
        pattern = self._compile(text, regex, case) if text else None
        if text and pattern is None:
            return
        keep = self.navigator.top_line()
        if text and pattern is not None:
            self.body.rows = self.search.set_filter(text, pattern, invert).state.lines
        else:
            self.search.clear_filter()
            self.body.rows = None
        self.body.forget()
        self.body.sync(follow=self._follow())
        if not text:
            if not self._follow():
                self.body.scroll_to_row(keep, context=0)
            self._view.post_message(msgs.FilterChanged(self._view, None, False, 0, True))
            self._status()

    def goto_first_error(self) -> None:
        """Jump to the first error line (a compiler's, ninja's, BuildKit's; not a warning)."""
        self.search.first_line(ERROR_LINE, "no error found")  # the progress model's own

    def goto_step(self, step: str | int) -> None:
        """Jump to the first line of BuildKit step `#step`."""
        sid = str(step).lstrip("#").strip()
        if not sid.isdigit():
            self._view.notify(f"not a step number: {sid[:20]!r}", severity="warning", markup=False)
            return
        self.search.first_line(re.compile(rf"^#{sid} ", re.MULTILINE), f"no step #{sid}")

    def goto_step_named(self, name: str) -> None:
        """Jump to the header line of the BuildKit step named `name` (`#12 [base 2/2] RUN
        ...`): where a timeline's step begins in the plain log."""
        header = re.compile(rf"^#\d{{1,9}} {re.escape(name)}\r?$", re.MULTILINE)
        self.search.first_line(header, f"no step named {name[:60]!r} in this log")

    def _compile(self, text: str, regex: bool, case: bool | None) -> re.Pattern[str] | None:
        """The query's pattern, or None once a bad one is said."""
        try:
            return compile_query(text, regex=regex, case=case)
        except re.error as exc:
            self._view.notify(f"bad pattern: {exc}", severity="error", markup=False)
            return None

    def report(self) -> None:
        """Tell the find's and the filter's state up (what they found so far, the match on)."""
        find, filt = self.search.find, self.search.filter
        if find is not None:
            match_no = self.search.match_no
            self._view.post_message(
                msgs.FindChanged(self._view, find.text, find.lines, match_no, find.done)
            )
        if filt is not None:
            inv = filt.invert
            self._view.post_message(
                msgs.FilterChanged(self._view, filt.text, inv, filt.lines, filt.done)
            )
