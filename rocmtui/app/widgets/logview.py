"""LogView: a build log of any size, followed live, found in, filtered, copied from.

    LogView(path, follow=True)        # embed it; .set_path(other) to switch files

Everything slow runs in thread workers (`group="logview-*"`, each checking `is_cancelled`):
opening and indexing (tail first, then backwards), reading what the file grew by, searching, big
reads. Follow mode polls the file's size on a timer (`POLL_SECONDS`) and posts one coalesced
update per poll, never one per line. The event loop only renders the rows on screen (see
`LogBody`). Keys are data (`BINDINGS`, each with an id so a keymap can move it); the view sends
`Progress`, `FindChanged`, `FilterChanged`, `FollowChanged`, `FileReset` and `Copied` up.
Copying uses OSC 52 through `App.copy_to_clipboard`, only when asked, with sanitised text.
Split for size: opening and following are the mixin `LogViewTail` (logview_tail); keys, searches
and the status line the mixin `LogViewActions` (logview_actions); the rows are `LogBody`.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.reactive import reactive
from textual.widgets import Input, Label, Static

from rocmtui.app.widgets import logview_messages as msgs
from rocmtui.app.widgets.logview_actions import LogViewActions, _Search
from rocmtui.app.widgets.logview_body import LogBody
from rocmtui.app.widgets.logview_tail import (
    FAST_STREAM_LINES,
    FAST_STREAM_PAUSE,
    POLL_SECONDS,
    PROGRESS_EVERY,
    TRIM_AFTER,
    LogViewTail,
    release_freed_memory,
)
from rocmtui.core.logindex import LineIndex
from rocmtui.core.logsearch import SearchState
from rocmtui.core.progress_ninja import ERROR_LINE

# the tail's names were defined here before it became its own module: still importable from here
__all__ = [
    "BINDINGS",
    "FAST_STREAM_LINES",
    "FAST_STREAM_PAUSE",
    "POLL_SECONDS",
    "PROGRESS_EVERY",
    "TRIM_AFTER",
    "LogView",
    "release_freed_memory",
]


BINDINGS: list[Binding] = [
    Binding("f", "toggle_follow", "Follow", id="logview.follow"),
    Binding("w", "toggle_wrap", "Wrap", id="logview.wrap"),
    Binding("slash", "prompt('find')", "Find", id="logview.find"),
    Binding("n", "next_match(1)", "Next", id="logview.next"),
    Binding("N", "next_match(-1)", "Prev", id="logview.prev", show=False),
    Binding("g,home", "top", "Top", id="logview.top", show=False),
    Binding("G,end", "bottom", "Bottom", id="logview.bottom", show=False),
    Binding("e", "first_error", "First error", id="logview.first_error"),
    Binding("colon", "prompt('goto')", "Go to line", id="logview.goto", show=False),
    Binding("s", "prompt('step')", "Go to step", id="logview.step", show=False),
    Binding("F", "prompt('filter')", "Filter", id="logview.filter"),
    Binding("exclamation_mark", "prompt('exclude')", "Exclude", id="logview.exclude", show=False),
    Binding("d", "toggle_dim", "Dim others", id="logview.dim", show=False),
    Binding("v", "select", "Select", id="logview.select", show=False),
    Binding("y", "copy", "Copy", id="logview.copy"),
    Binding("escape", "clear", "Clear", id="logview.clear", show=False),
]


class LogView(LogViewActions, LogViewTail, Vertical):
    """A log file, shown from the end first, followed as it grows. See the module docstring."""

    BINDINGS = BINDINGS  # type: ignore[assignment]
    DEFAULT_CSS = """
    LogView { height: 1fr; }
    LogView > LogBody { height: 1fr; }
    LogView > #logview-prompt { height: 1; display: none; }
    LogView > #logview-prompt.-open { display: block; }
    LogView > #logview-prompt > Label { width: auto; padding: 0 1; }
    LogView > #logview-prompt > Input { border: none; height: 1; padding: 0; width: 1fr; }
    LogView > #logview-status { height: 1; }
    """

    follow: reactive[bool] = reactive(True, repaint=False)
    wrap: reactive[bool] = reactive(False, repaint=False)
    dim: reactive[bool] = reactive(False, repaint=False)

    # -- messages (defined in logview_messages; handlers are on_log_view_<name>) -----------
    Progress = msgs.Progress
    FindChanged = msgs.FindChanged
    FilterChanged = msgs.FilterChanged
    FollowChanged = msgs.FollowChanged
    FileReset = msgs.FileReset
    Copied = msgs.Copied
    _Update = msgs.Update

    # -- life ----------------------------------------------------------------------------------
    def __init__(
        self,
        path: Path | str | None = None,
        follow: bool = True,
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        """Show `path` (or nothing until `set_path`), following it when `follow`."""
        super().__init__(name=name, id=id, classes=classes)
        self.path: Path | None = Path(path) if path is not None else None
        self.set_reactive(LogView.follow, follow)
        self.index: LineIndex | None = None
        self.error: str | None = None
        self._find: _Search | None = None
        self._filter: _Search | None = None
        self._match_no: int | None = None
        self._indexing: tuple[int, int] | None = None
        self._seen_prepended = 0
        self._stat: tuple[int, int, int, int, int] | None = None
        self._wake = threading.Event()
        self._status_text = ""
        self._warming = False
        self._prompt_mode = "find"
        self._regex = True
        self._case: bool | None = None
        self.body = LogBody(self._need_lines, id="logview-body")
        self.body.stick_to_end = follow

    def compose(self) -> ComposeResult:
        """Body, a one-line prompt (hidden) and a status line."""
        yield self.body
        with Horizontal(id="logview-prompt"):
            yield Label("", id="logview-prompt-label")
            yield Input(id="logview-input", select_on_focus=False)
        yield Static("", id="logview-status", markup=False)

    def on_mount(self) -> None:
        """Start reading the file and polling it."""
        self.body.on_user_scroll_up = self._user_scrolled_up
        self.body.on_user_end = self.action_bottom
        self.body.on_view_moved = self._status
        self.set_interval(POLL_SECONDS, self._poll)
        if self.path is not None:
            self._open(self.path)

    def set_path(self, path: Path | str) -> None:
        """Show another file (searches are dropped; follow mode is kept)."""
        self.path = Path(path)
        self._find = self._filter = None
        self.body.find = None
        self.body.rows = None
        if self.is_mounted:
            self._open(self.path)

    # -- public API ----------------------------------------------------------------------------
    @property
    def line_count(self) -> int:
        """Lines of the file indexed so far."""
        return self.index.line_count if self.index is not None else 0

    @property
    def index_complete(self) -> bool:
        """True once every line of the file (so far) is indexed and numbered."""
        return self.index is not None and self.index.complete

    def screen_text(self) -> list[str]:
        """Plain text of each row of the body as it is on screen now."""
        return self.body.screen_text()

    def find(self, text: str | None, *, regex: bool = True, case: bool | None = None) -> None:
        """Highlight `text` everywhere (`None` clears); n/N then walk the matches. A search
        still running for an older find sees it was replaced and stops."""
        if not text:
            self._find = None
            self.body.find = None
            self.body.current_line = None
            self._match_no = None
            self.body.restyle()
            self.post_message(self.FindChanged(self, None, 0, None, True))
            self._status()
            return
        pattern = self._compile(text, regex, case)
        if pattern is None:
            return
        self._find = _Search(text, SearchState(pattern))
        self._match_no = None
        self.body.find = pattern
        self.body.current_line = None
        self.body.restyle()
        self._search_worker(self._find, "find")

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
        if not text:
            self._filter = None
            keep = self._top_line()
            self.body.rows = None
            self.body.forget()
            self.body.sync(follow=self.follow)
            if not self.follow:
                self.body.scroll_to_row(keep, context=0)
            self.post_message(self.FilterChanged(self, None, False, 0, True))
            self._status()
            return
        pattern = self._compile(text, regex, case)
        if pattern is None:
            return
        self._filter = _Search(text, SearchState(pattern, invert))
        self.body.rows = self._filter.state.lines
        self.body.forget()
        self.body.sync(follow=self.follow)
        self._search_worker(self._filter, "filter")

    def goto_line(self, number: int) -> None:
        """Show file line `number` (1-based), marked; under a filter, the first shown line
        from it. (A jump to the first error or a step lands here too: the screen may not be
        able to put the line at its top, and the mark says which line it is.)"""
        self.follow = False
        body = self.body
        row = body.row_of_line(max(0, number - 1))
        body.current_line = body.line_of_row(row) if body.row_count else None
        body.restyle()
        body.scroll_to_row(row)
        self._status()

    def goto_first_error(self) -> None:
        """Jump to the first error line (a compiler's, ninja's, BuildKit's; not a warning)."""
        self._first_line_matching(ERROR_LINE, "no error found")  # the progress model's own

    def goto_step(self, step: str | int) -> None:
        """Jump to the first line of BuildKit step `#step`."""
        sid = str(step).lstrip("#").strip()
        if not sid.isdigit():
            self.notify(f"not a step number: {sid[:20]!r}", severity="warning")
            return
        self._first_line_matching(re.compile(rf"^#{sid} ", re.MULTILINE), f"no step #{sid}")

    # -- following (opening, indexing and tailing are in LogViewTail) --------------------------
    def _user_scrolled_up(self) -> None:
        if self.follow:
            self.follow = False

    def watch_follow(self, follow: bool) -> None:
        """Jump to the end when follow goes on; tell the parent either way."""
        self.body.stick_to_end = follow
        if follow and self.is_mounted:
            self.body.sync(follow=True)
        self.post_message(self.FollowChanged(self, follow))
        self._status()

    def watch_wrap(self, wrap: bool) -> None:
        """Re-lay the rows out."""
        self.body.wrap = wrap
        self.body.restyle()  # the styled lines stay cached; only their layout changes
        self.body.sync(follow=self.follow)
        self._status()

    def watch_dim(self, dim: bool) -> None:
        """Dim or undim the lines without a match."""
        self.body.dim = dim
        self.body.restyle()
        self._status()
