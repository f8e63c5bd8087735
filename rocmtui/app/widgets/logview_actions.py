"""The keys of the log view and what they start: find, filter, jumps, selection, copy, status.

A mixin of `LogView` (kept apart so each module stays readable); it uses the view's `body`,
`index`, `follow`/`wrap`/`dim` reactives and messages. Searches run in thread workers; results
are applied on the event loop through coalesced `_Update` messages.
"""

from __future__ import annotations

import re
import time
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import work
from textual.widgets import Input, Label, Static
from textual.worker import get_current_worker

from rocmtui.core.logsearch import SearchState, compile_query, scan
from rocmtui.core.sanitize import sanitize_line

if TYPE_CHECKING:
    pass

COPY_MAX_LINES = 10_000
COPY_MAX_CHARS = 4 << 20
PROGRESS_EVERY = 0.3  # a search's partial results repaint the rows: not too often, it slows it
PROMPTS = {
    "find": "find",
    "filter": "filter",
    "exclude": "exclude",
    "goto": "line",
    "step": "step #",
}


@dataclass
class _Search:
    """A find or filter: what was asked and how far the search got."""

    text: str
    state: SearchState
    done: bool = False


class LogViewActions:
    """Actions, searches, the prompt and the status line of `LogView`."""

    _match_no: int | None  # the 1-based match n/N landed on (set in LogView.__init__)

    # -- searching -----------------------------------------------------------------------------
    def _compile(self: Any, text: str, regex: bool, case: bool | None) -> re.Pattern[str] | None:
        try:
            return compile_query(text, regex=regex, case=case)
        except re.error as exc:
            self.notify(f"bad pattern: {exc}", severity="error", markup=False)
            return None

    @work(thread=True, group="logview-search", exit_on_error=False)
    def _search_worker(self: Any, search: _Search, kind: str) -> None:
        worker = get_current_worker()
        # numbers are the file's own only once the index reached byte 0
        while not (self.index is not None and self.index.complete):
            if worker.is_cancelled or (self._find is not search and self._filter is not search):
                return
            time.sleep(0.02)
        index = self.index
        last = 0.0

        def progress(done: int, total: int) -> None:
            nonlocal last
            now = time.monotonic()
            if now - last >= PROGRESS_EVERY:
                last = now
                self.post_message(self._Update())
                self.post_message(self.Progress(self, kind, done, total))

        def stale() -> bool:
            return worker.is_cancelled or (self._find is not search and self._filter is not search)

        fd = index.fileno()
        if fd is None:
            return
        try:
            # the file may grow while we search: go on until caught up with the index
            while scan(fd, search.state, index.size, stale, progress):
                if search.state.next_byte >= index.size or search.state.partial:
                    break
        except OSError:
            return
        if stale():
            return
        search.done = True
        self.post_message(self.Progress(self, kind, index.size, index.size))
        self.app.call_from_thread(self._search_done, search, kind)

    def _search_done(self: Any, search: _Search, kind: str) -> None:
        self._update()
        if (
            kind == "find"
            and search is self._find
            and self._match_no is None
            and search.state.lines
            and not self.follow
        ):
            self._jump_match(1, quiet=True)
        self._post_search_state()

    def _post_search_state(self: Any) -> None:
        find, filt = self._find, self._filter
        if find is not None:
            n = len(find.state.lines)
            self.post_message(self.FindChanged(self, find.text, n, self._match_no, find.done))
        if filt is not None:
            n = len(filt.state.lines)
            inv = filt.state.invert
            self.post_message(self.FilterChanged(self, filt.text, inv, n, filt.done))

    def _first_line_matching(self: Any, pattern: re.Pattern[str], missing: str) -> None:
        self._first_worker(pattern, missing)

    @work(thread=True, exclusive=True, group="logview-jump", exit_on_error=False)
    def _first_worker(self: Any, pattern: re.Pattern[str], missing: str) -> None:
        worker = get_current_worker()
        while not (self.index is not None and self.index.complete):
            if worker.is_cancelled:
                return
            time.sleep(0.02)
        index = self.index
        state = SearchState(pattern)
        fd = index.fileno()
        if fd is None:
            return
        scan(fd, state, index.size, lambda: worker.is_cancelled, limit=1)
        if worker.is_cancelled:
            return
        if state.lines:
            self.app.call_from_thread(self.goto_line, state.lines[0] + 1)
        else:
            self.app.call_from_thread(self.notify, missing, severity="warning")

    # -- positions -----------------------------------------------------------------------------
    def _top_line(self: Any) -> int:
        rows = self.body.visible_rows()
        return self.body.line_of_row(rows.start) if len(rows) else 0

    def _jump_match(self: Any, step: int, quiet: bool = False) -> None:
        find = self._find
        if find is None or not find.state.lines:
            if not quiet:
                self.notify("no matches" if find else "nothing to find: press /")
            return
        lines = find.state.lines
        body = self.body
        here = body.current_line
        if here is None:
            rows = body.visible_rows()
            here = body.line_of_row(rows.start if step > 0 else rows.stop - 1) if rows else 0
            here += -1 if step > 0 else 1
        i = bisect_right(lines, here) if step > 0 else bisect_left(lines, here) - 1
        if self._filter is not None:  # skip matches the filter hides
            rows = self._filter.state.lines
            while 0 <= i < len(lines):
                r = bisect_left(rows, lines[i])
                if r < len(rows) and rows[r] == lines[i]:
                    break
                i += step
        if not 0 <= i < len(lines):
            self.notify("no more matches" if step > 0 else "no earlier matches")
            return
        self.follow = False
        self._match_no = i + 1
        body.current_line = lines[i]
        body.restyle()
        body.scroll_to_row(body.row_of_line(lines[i]))
        self._post_search_state()
        self._status()

    # -- actions -------------------------------------------------------------------------------
    def action_toggle_follow(self: Any) -> None:
        """f: follow on/off."""
        self.follow = not self.follow

    def action_toggle_wrap(self: Any) -> None:
        """w: wrap long lines on/off."""
        self.wrap = not self.wrap

    def action_toggle_dim(self: Any) -> None:
        """d: dim lines without a match."""
        self.dim = not self.dim

    def action_top(self: Any) -> None:
        """g: first line."""
        self.follow = False
        self.body.scroll_to_row(0, context=0)

    def action_bottom(self: Any) -> None:
        """G: last line, and follow."""
        self.follow = True

    def action_next_match(self: Any, step: int) -> None:
        """n / N: next / previous match."""
        self._jump_match(step)

    def action_first_error(self: Any) -> None:
        """e: first error."""
        self.goto_first_error()

    def action_prompt(self: Any, mode: str) -> None:
        """/, F, !, :, s: open the prompt."""
        self._prompt_mode = mode
        self._prompt_label()
        prompt = self.query_one("#logview-prompt")
        prompt.add_class("-open")
        box = self.query_one("#logview-input", Input)
        box.value = ""
        # now, not after the next refresh: keys typed right after "/" belong to the prompt
        self.screen.set_focus(box)

    def _prompt_label(self: Any) -> None:
        label = PROMPTS.get(self._prompt_mode, self._prompt_mode)
        if self._prompt_mode in ("find", "filter", "exclude"):
            case = {None: "smart", True: "Aa", False: "aa"}[self._case]
            label += f" [{'.*' if self._regex else 'lit'} {case}] (^R ^T)"
        self.query_one("#logview-prompt-label", Label).update(Text(label + ":"))

    def on_input_submitted(self: Any, event: Input.Submitted) -> None:
        """Enter in the prompt: do what it was opened for."""
        event.stop()
        text = event.value.strip()
        mode = self._prompt_mode
        self._close_prompt()
        if mode == "find":
            self.find(text or None, regex=self._regex, case=self._case)
        elif mode in ("filter", "exclude"):
            self.set_filter(
                text or None, invert=mode == "exclude", regex=self._regex, case=self._case
            )
        elif mode == "goto" and text:
            if text.replace(",", "").isdigit():
                self.goto_line(int(text.replace(",", "")))
            else:
                self.notify("a line number, please", severity="warning")
        elif mode == "step" and text:
            self.goto_step(text)

    def on_key(self: Any, event: Any) -> None:
        """In the prompt: escape closes it, ^R toggles regex, ^T cycles case."""
        if not self.query_one("#logview-prompt").has_class("-open"):
            return
        if event.key == "escape":
            event.stop()
            self._close_prompt()
        elif event.key == "ctrl+r":
            event.stop()
            self._regex = not self._regex
            self._prompt_label()
        elif event.key == "ctrl+t":
            event.stop()
            self._case = {None: True, True: False, False: None}[self._case]
            self._prompt_label()

    def _close_prompt(self: Any) -> None:
        self.query_one("#logview-prompt").remove_class("-open")
        self.body.focus()

    def check_action(self: Any, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Escape only clears when there is something to clear (else it goes to the screen)."""
        if action == "clear":
            return bool(self._find or self._filter or self.body.select_anchor is not None)
        return True

    def action_clear(self: Any) -> None:
        """escape: end selection, else clear find and filter."""
        if self.body.select_anchor is not None:
            self.body.select_anchor = self.body.select_cursor = None
            self.body.restyle()
        else:
            if self._find is not None:
                self.find(None)
            if self._filter is not None:
                self.set_filter(None)
        self._status()

    def action_select(self: Any) -> None:
        """v: start (or restart) selecting lines; up/down extend, y copies."""
        body = self.body
        self.follow = False
        rows = body.visible_rows()
        row = body.row_of_line(body.current_line) if body.current_line is not None else None
        if row is None or row not in rows:
            row = rows.stop - 1 if rows else 0
        body.select_anchor = body.select_cursor = row
        body.restyle()
        self._status()

    def action_copy(self: Any) -> None:
        """y: copy the selected lines (or the screen) to the clipboard via OSC 52."""
        body = self.body
        if body.select_anchor is not None and body.select_cursor is not None:
            lo, hi = sorted((body.select_anchor, body.select_cursor))
        else:
            rows = body.visible_rows()
            if not rows:
                return
            lo, hi = rows.start, rows.stop - 1
        hi = min(hi, lo + COPY_MAX_LINES - 1)
        lines = [body.line_of_row(r) for r in range(lo, hi + 1)]
        self._copy_worker(lines)

    @work(thread=True, exclusive=True, group="logview-copy", exit_on_error=False)
    def _copy_worker(self: Any, lines: list[int]) -> None:
        index = self.index
        if index is None:
            return
        out: list[str] = []
        size = 0
        for line in lines:
            got = index.read_lines(line, line + 1, cap=COPY_MAX_CHARS)
            if not got:
                continue
            text = sanitize_line(got[0][0].decode("utf-8", "replace"))
            size += len(text) + 1
            if size > COPY_MAX_CHARS:
                break
            out.append(text)
        self.app.call_from_thread(self._copied, "\n".join(out) + "\n", len(out))

    def _copied(self: Any, text: str, count: int) -> None:
        self.app.copy_to_clipboard(text)
        body = self.body
        if body.select_anchor is not None:
            body.select_anchor = body.select_cursor = None
            body.restyle()
        self.notify(f"copied {count:,} line{'s' if count != 1 else ''}")
        self.post_message(self.Copied(self, count, len(text)))

    # -- status ---------------------------------------------------------------------------------
    def _status(self: Any) -> None:
        if not self.is_mounted:
            return
        parts: list[str] = []
        if self.error:
            parts.append(f"⚠ {self.error}")
        index = self.index
        if index is not None and index.removed:
            parts.append("⚠ removed; still followed")
        if self.path is not None:
            parts.append(self.path.name)
        if index is not None:
            rows = self.body.visible_rows()
            total = index.line_count
            if index.complete and len(rows):
                first = self.body.line_of_row(rows.start) + 1
                last = self.body.line_of_row(rows.stop - 1) + 1
                parts.append(f"{first:,}–{last:,} of {total:,}")
            else:
                parts.append(f"{total:,}+ lines")
            if self._indexing and not index.complete:
                done, size = self._indexing
                parts.append(f"indexing {100 * done // max(1, size)}%")
        parts.append("FOLLOW" if self.follow else "paused")
        if self.wrap:
            parts.append("wrap")
        if self._find is not None:
            find = self._find
            n = len(find.state.lines)
            where = f"{self._match_no:,}/" if self._match_no else ""
            more = "" if find.done else "…"
            parts.append(f"/{find.text[:30]}/ {where}{n:,}{more}")
        if self._filter is not None:
            filt = self._filter
            sign = "!" if filt.state.invert else ""
            more = "" if filt.done else "…"
            parts.append(f"filter {sign}{filt.text[:30]}: {len(filt.state.lines):,}{more}")
        if self.body.select_anchor is not None:
            parts.append("select: ↑↓ then y")
        line = sanitize_line(" │ ".join(parts))
        if line != self._status_text:  # one row, fixed size: no layout pass needed
            self._status_text = line
            self.query_one("#logview-status", Static).update(Text(line), layout=False)
