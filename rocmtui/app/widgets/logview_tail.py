"""Opening, indexing and following the log view's file: the worker threads and their handlers.

A mixin of `LogView` (kept apart so each module stays readable); it uses the view's `body`,
`index`, `follow` reactive, searches and messages. Opening indexes the tail first, then the rest
backwards; following polls the file's size on a timer (`POLL_SECONDS`) and wakes one long-lived
tail thread, which posts one coalesced update per poll, never one per line. Lines too big to read
on the event loop are warmed in a worker.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
import time
from pathlib import Path
from typing import Any

from textual import work
from textual.worker import get_current_worker

from rocmtui.app.widgets import logview_messages as msgs
from rocmtui.core.logindex import Change, LineIndex
from rocmtui.core.logsearch import SearchState, scan

POLL_SECONDS = 0.1
FAST_STREAM_LINES = 1000  # lines in one update above which the next one waits a little
FAST_STREAM_PAUSE = 0.1
TRIM_AFTER = 8 << 20  # bytes read after which freed heap is handed back to the OS
PROGRESS_EVERY = 0.1  # seconds between progress updates from a worker


M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter
MMAP_THRESHOLD = 256 << 10  # bytes: allocations this big always come from (and go back by) mmap


def _glibc() -> Any:
    """glibc, loaded once and set up for reading a growing file; None where there is none.

    glibc serves big allocations with mmap until the first one is freed, then raises its mmap
    threshold to that size: from then on each 2 MB read buffer came from the heap and left it
    fragmented (measured: +1.1 MB of RSS after following 5,000,000 lines). A fixed threshold
    keeps read buffers on mmap, returned whole when freed.
    """
    global _libc
    if _libc is None:
        try:
            lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            lib.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
            lib.malloc_trim.argtypes = [ctypes.c_size_t]
            _libc = lib
        except (OSError, AttributeError):
            _libc = False
    return _libc or None


def release_freed_memory() -> None:
    """Give freed heap back to the OS (glibc keeps it otherwise, and a followed log's RSS
    would drift up by the size of its read buffers). A no-op where there is no glibc."""
    lib = _glibc()
    if lib is not None:
        lib.malloc_trim(0)


_libc: Any = None


class LogViewTail:
    """Opening, indexing, polling and following the file of `LogView`."""

    # state of `LogView` this mixin sets (all set first in LogView.__init__)
    index: LineIndex | None
    error: str | None
    _indexing: tuple[int, int] | None  # lines indexed of total, while the backward scan runs
    _seen_prepended: int
    _stat: tuple[int, int, int, int, int] | None  # (dev, inode, size, mtime, gone): last poll
    _warming: bool

    def _open(self: Any, path: Path) -> None:
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
    def _open_worker(self: Any, path: Path) -> None:
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

    def _scan_back(self: Any, index: LineIndex) -> None:
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

    def _opened(self: Any, index: LineIndex, st: os.stat_result, painted: threading.Event) -> None:
        self.index = index
        self.error = None
        self._seen_prepended = index.prepended
        self._stat = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, 0)
        self.body.index = index
        self.body.forget()
        self.body.sync(follow=True)
        self._wake.clear()
        self._tail_loop(index)
        self.call_after_refresh(painted.set)
        if not self.follow:
            self.body.scroll_to_row(0, context=0)
        self._status()

    def _failed(self: Any, reason: str) -> None:
        self.error = reason
        self._status()
        self.post_message(self.FileReset(self, reason))

    def _poll(self: Any) -> None:
        """Timer: when the file changed, wake the tail thread to read what is new."""
        if self.index is None or self.path is None:
            return
        try:
            st, gone = self.index.stat()  # removed: the open file may still grow
            now: tuple[int, int, int, int, int] | None = (
                st.st_dev,
                st.st_ino,
                st.st_size,
                st.st_mtime_ns,
                int(gone),  # a removal alone is a change too: the status says so
            )
        except OSError:
            now = None
        if now == self._stat:
            return
        self._stat = now
        self._wake.set()

    @work(thread=True, exclusive=True, group="logview-tail", exit_on_error=False)
    def _tail_loop(self: Any, index: LineIndex) -> None:
        """One long-lived thread per file: a thread per poll would leave a malloc arena per
        thread holding freed read buffers, and RSS would creep up while following."""
        worker = get_current_worker()
        _glibc()  # the mmap threshold is fixed before the first read buffer
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

    def _tailed(self: Any, index: LineIndex, change: Change, before: int) -> None:
        if index is not self.index:
            return
        if change is Change.RESET:
            self.body.forget()
            self.body.current_line = None  # the line a jump landed on is gone
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
            self._status()  # the path is gone: the status says so

    @work(thread=True, exclusive=True, group="logview-index", exit_on_error=False)
    def _rescan(self: Any, index: LineIndex) -> None:
        self._scan_back(index)
        for search, kind in ((self._find, "find"), (self._filter, "filter")):
            if search is not None:
                self.app.call_from_thread(self._search_worker, search, kind)

    def on_log_view_update(self: Any, message: msgs.Update) -> None:
        """Coalesced: the index or a search moved on."""
        message.stop()
        self._update()

    def _update(self: Any) -> None:
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

    def _need_lines(self: Any, lines: list[int]) -> None:
        """The body met lines too big to read on the event loop: read them in a worker."""
        if not self._warming and self.index is not None:
            self._warming = True
            self._warm_worker(self.index, lines[:64])

    @work(thread=True, group="logview-warm", exit_on_error=False)
    def _warm_worker(self: Any, index: LineIndex, lines: list[int]) -> None:
        try:
            for line in lines:
                if line < index.line_count:
                    index.spans(line, line + 1)
        finally:
            self.app.call_from_thread(self._warmed)

    def _warmed(self: Any) -> None:
        self._warming = False
        self.body.forget()
        self.body.refresh()
