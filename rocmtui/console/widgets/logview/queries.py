"""Find, filter and the jumps of one log view: the queries, and what their searches found.

A query's pattern is compiled here (a bad one is said, not raised), the body's look and rows
are set from it, and its search starts on the `SearchController`'s threads; the find and
filter state is told up as `FindChanged` and `FilterChanged`. The view keeps the public
methods and keys that ask for a query, and the handlers that hear a search end.
"""

from __future__ import annotations


class LogQueries:
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
        self.post_message(self.FindChanged(self, None, 0, None, True))
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
        self.body.sync(follow=self.follow)
        if not text:
            if not self.follow:
                self.body.scroll_to_row(keep, context=0)
            self.post_message(self.FilterChanged(self, None, False, 0, True))
            self._status()

    def goto_first_error(self) -> None:
        """Jump to the first error line (a compiler's, ninja's, BuildKit's; not a warning)."""
        self.search.first_line(ERROR_LINE, "no error found")  # the progress model's own

    def goto_step(self, step: str | int) -> None:
        """Jump to the first line of BuildKit step `#step`."""
        sid = str(step).lstrip("#").strip()
        if not sid.isdigit():
            self.notify(f"not a step number: {sid[:20]!r}", severity="warning", markup=False)
            return
        self.search.first_line(re.compile(rf"^#{sid} ", re.MULTILINE), f"no step #{sid}")

    def goto_step_named(self, name: str) -> None:
        """Jump to the header line of the BuildKit step named `name` (`#12 [base 2/2] RUN
        ...`): where a timeline's step begins in the plain log."""
        header = re.compile(rf"^#\d{{1,9}} {re.escape(name)}\r?$", re.MULTILINE)
        self.search.first_line(header, f"no step named {name[:60]!r} in this log")

    def _compile(self, text: str, regex: bool, case: bool | None) -> re.Pattern[str] | None:
        try:
            return compile_query(text, regex=regex, case=case)
        except re.error as exc:
            self.notify(f"bad pattern: {exc}", severity="error", markup=False)
            return None

    def _post_search_state(self) -> None:
        find, filt = self.search.find, self.search.filter
        if find is not None:
            match_no = self.search.match_no
            self.post_message(self.FindChanged(self, find.text, find.lines, match_no, find.done))
        if filt is not None:
            inv = filt.invert
            self.post_message(self.FilterChanged(self, filt.text, inv, filt.lines, filt.done))
