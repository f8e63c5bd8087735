"""LogView: a build log of any size, followed live, found in, filtered, copied from.

    LogView(path, follow=True)        # embed it; .set_path(other) to switch files

Everything slow runs in thread workers (`group="logview-*"`, each checking `is_cancelled`):
opening and indexing (tail first, then backwards), reading what the file grew by, searching, big
reads. Follow mode polls the file's size on a timer (`POLL_SECONDS`) and posts one coalesced
update per poll, never one per line. The event loop only renders the rows on screen (see
`LogBody`). Keys are data (`BINDINGS`, each with an id so a keymap can move it); the view sends
`Progress`, `FindChanged`, `FilterChanged`, `FollowChanged`, `FileReset` and `Copied` up.
Copying uses OSC 52 through `App.copy_to_clipboard`, only when asked, with sanitised text.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import re
import threading
import time
from pathlib import Path
from typing import Any

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.reactive import reactive
from textual.widgets import Input, Label, Static
from textual.worker import get_current_worker

from rocmtui.app.widgets import logview_messages as msgs
from rocmtui.app.widgets.logview_actions import LogViewActions, _Search
from rocmtui.app.widgets.logview_body import LogBody
from rocmtui.core.logindex import Change, LineIndex
from rocmtui.core.logsearch import SearchState, scan

POLL_SECONDS = 0.1
FAST_STREAM_LINES = 1000  # lines in one update above which the next one waits a little
FAST_STREAM_PAUSE = 0.1
TRIM_AFTER = 8 << 20  # bytes read after which freed heap is handed back to the OS
PROGRESS_EVERY = 0.1  # seconds between progress updates from a worker
ERROR_RE = re.compile(r"\berror\b|\bfatal\b|\bfailed\b", re.IGNORECASE | re.MULTILINE)

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


def release_freed_memory() -> None:
    """Give freed heap back to the OS (glibc keeps it otherwise, and a followed log's RSS
    would drift up by the size of its read buffers). A no-op where there is no glibc."""
    global _malloc_trim
    if _malloc_trim is None:
        try:
            _malloc_trim = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
        except (OSError, AttributeError):
            _malloc_trim = False
    if _malloc_trim:
        _malloc_trim(0)


_malloc_trim: Any = None


class LogView(LogViewActions, Vertical):
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
        self._stat: tuple[int, int, int, int] | None = None
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
        """Show file line `number` (1-based); under a filter, the first shown line from it."""
        self.follow = False
        row = self.body.row_of_line(max(0, number - 1))
        self.body.scroll_to_row(row)
        self._status()

    def goto_first_error(self) -> None:
        """Jump to the first line that says error, fatal or failed."""
        self._first_line_matching(ERROR_RE, "no error found")

    def goto_step(self, step: str | int) -> None:
        """Jump to the first line of BuildKit step `#step`."""
        sid = str(step).lstrip("#").strip()
        if not sid.isdigit():
            self.notify(f"not a step number: {sid[:20]!r}", severity="warning")
            return
        self._first_line_matching(re.compile(rf"^#{sid} ", re.MULTILINE), f"no step #{sid}")

    # -- opening and following -----------------------------------------------------------------
    def _open(self, path: Path) -> None:
        self.workers.cancel_group(self, "logview-index")
        self.workers.cancel_group(self, "logview-tail")
        if self.index is not None:
            self.index.close()
        self.index = None
        self.body.index = None
        self.body.forget()
        self._stat = None
        self._open_worker(path)

    @work(thread=True, exclusive=True, group="logview-index", exit_on_error=False)
    def _open_worker(self, path: Path) -> None:
        index = LineIndex(path)
        try:
            index.open()
            st = os.stat(path)
        except OSError as exc:
            self.app.call_from_thread(self._failed, f"{path.name}: {exc.strerror or exc}")
            return
        painted = threading.Event()
        self.app.call_from_thread(self._opened, index, st, painted)
        # let the tail reach the screen first: the scan would share the GIL with that paint
        painted.wait(1.0)
        self._scan_back(index)

    def _scan_back(self, index: LineIndex) -> None:
        """Index the rest of the file backwards (in this worker thread)."""
        worker = get_current_worker()
        last = 0.0

        def progress(done: int, total: int) -> None:
            nonlocal last
            self._indexing = (done, total)
            now = time.monotonic()
            if now - last >= PROGRESS_EVERY or done >= total:
                last = now
                self.post_message(self._Update())
                self.post_message(self.Progress(self, "index", done, total))

        index.scan_back(cancelled=lambda: worker.is_cancelled, progress=progress)
        self.post_message(self._Update())

    def _opened(self, index: LineIndex, st: os.stat_result, painted: threading.Event) -> None:
        self.index = index
        self.error = None
        self._seen_prepended = index.prepended
        self._stat = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        self.body.index = index
        self.body.forget()
        self.body.sync(follow=True)
        self._wake.clear()
        self._tail_loop(index)
        self.call_after_refresh(painted.set)
        if not self.follow:
            self.body.scroll_to_row(0, context=0)
        self._status()

    def _failed(self, reason: str) -> None:
        self.error = reason
        self._status()
        self.post_message(self.FileReset(self, reason))

    def _poll(self) -> None:
        """Timer: when the file changed, wake the tail thread to read what is new."""
        if self.index is None or self.path is None:
            return
        try:
            st = os.stat(self.path)
            now: tuple[int, int, int, int] | None = (
                st.st_dev,
                st.st_ino,
                st.st_size,
                st.st_mtime_ns,
            )
        except OSError:
            now = None
        if now == self._stat:
            return
        self._stat = now
        self._wake.set()

    @work(thread=True, exclusive=True, group="logview-tail", exit_on_error=False)
    def _tail_loop(self, index: LineIndex) -> None:
        """One long-lived thread per file: a thread per poll would leave a malloc arena per
        thread holding freed read buffers, and RSS would creep up while following."""
        worker = get_current_worker()
        unreleased = 0  # bytes read since freed heap was last handed back
        while not worker.is_cancelled:
            if not self._wake.wait(0.5):
                continue
            self._wake.clear()
            before = index.line_count
            size = index.size
            change = Change.NONE
            try:
                change = index.refresh(cancelled=lambda: worker.is_cancelled)
                unreleased += max(0, index.size - size)
                if unreleased >= TRIM_AFTER:
                    unreleased = 0
                    release_freed_memory()
                fd = index.fileno()
                if change is Change.GREW and fd is not None and index.complete:
                    for search in (self._find, self._filter):
                        if search is not None and search.done:
                            scan(fd, search.state, index.size)
            except OSError as exc:
                if index is not self.index:  # closed under us: the view moved to another file
                    return
                self.app.call_from_thread(self._failed, f"read: {exc.strerror or exc}")
            if worker.is_cancelled:
                return
            # waits for the event loop to apply it: the next read starts after the last paint
            self.app.call_from_thread(self._tailed, index, change, before)
            if index.line_count - before >= FAST_STREAM_LINES:
                # thousands of lines a second are a blur at 10 frames/s as at 5: paint less
                # often and leave the event loop free for keys
                time.sleep(FAST_STREAM_PAUSE)

    def _tailed(self, index: LineIndex, change: Change, before: int) -> None:
        if index is not self.index:
            return
        if change is Change.RESET:
            self.body.forget()
            self._seen_prepended = 0
            for search in (self._find, self._filter):
                if search is not None:
                    search.state = SearchState(search.state.pattern, search.state.invert)
                    search.done = False
            if self._filter is not None:
                self.body.rows = self._filter.state.lines
            self.body.sync(follow=self.follow)
            self.post_message(self.FileReset(self, "truncated or replaced"))
            self._rescan(index)
        elif change is Change.GREW:
            if self.follow and index.line_count - before >= self.body.size.height:
                self.body.drop_scrolled_out()
            else:
                self.body.forget_line(before - 1)  # it may have been a partial line
            self._update()
        elif change is Change.MISSING:
            self._stat = None  # look again next poll

    @work(thread=True, exclusive=True, group="logview-index", exit_on_error=False)
    def _rescan(self, index: LineIndex) -> None:
        self._scan_back(index)
        for search, kind in ((self._find, "find"), (self._filter, "filter")):
            if search is not None:
                self.app.call_from_thread(self._search_worker, search, kind)

    def on_log_view_update(self, message: msgs.Update) -> None:
        """Coalesced: the index or a search moved on."""
        message.stop()
        self._update()

    def _update(self) -> None:
        index = self.index
        if index is None:
            return
        # lines the backward scan put in front move every row down by that much
        shift = index.prepended - self._seen_prepended
        self._seen_prepended = index.prepended
        if shift and self.body.rows is None:
            self.body.forget()
        self.body.sync(follow=self.follow, shift=0 if self.body.rows is not None else shift)
        self._status()

    def _need_lines(self, lines: list[int]) -> None:
        """The body met lines too big to read on the event loop: read them in a worker."""
        if not self._warming and self.index is not None:
            self._warming = True
            self._warm_worker(self.index, lines[:64])

    @work(thread=True, group="logview-warm", exit_on_error=False)
    def _warm_worker(self, index: LineIndex, lines: list[int]) -> None:
        try:
            for line in lines:
                if line < index.line_count:
                    index.spans(line, line + 1)
        finally:
            self.app.call_from_thread(self._warmed)

    def _warmed(self) -> None:
        self._warming = False
        self.body.forget()
        self.body.refresh()

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
