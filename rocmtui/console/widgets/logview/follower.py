"""Following one log file: its line index, the backward scan, and what the file grew by.

    follower = LogFollower(path, notify)   # notify(follower, event), on the watcher's thread
    follower.start()                       # the file is opened, indexed and followed ...
    follower.painted(); follower.applied() # ... as fast as its reader takes the results
    follower.stop()

A `LogFollower` owns the `LineIndex` of one file and does no I/O on the caller's thread: a
`LogWatcher` (watcher.py: one thread for every follower in the process, toolong's shape) calls
`serve()`, which does one bounded step: open the file and index its tail; or index the rest
backwards, a slice at a time (after the tail is on screen, so the scan does not share the GIL
with that first paint); or, every `POLL_SECONDS`, read what the file grew by. Results go out as
events (`Opened`, `Failed`, `Indexing`, `Tailed`) through `notify`. A `Tailed` is not followed
by another until the reader says it `applied()` the last one: a slow event loop slows the
reads instead of queueing them. Nothing here knows Textual; the view turns events into
messages.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from msgspec import Struct

from rocmtui.console.performance import release_freed_memory
from rocmtui.console.widgets.logview.watcher import LogWatcher
from rocmtui.core.logs.index import Change, LineIndex

# How often a followed file is looked at: at most 20 reads (and frames) a second however fast
# it grows, and a read waits for the last to be on screen. The newest line on screen is then at
# most ~50 ms old, also in a frame a key press repaints whole (w: wrap); reading every 100 ms,
# such frames showed lines up to 0.1-0.2 s old (bench_logs: newest-line age p95 0.22 s).
POLL_SECONDS = 0.05
TRIM_AFTER = 8 << 20  # bytes read after which freed heap is handed back to the OS
PROGRESS_EVERY = 0.1  # seconds between progress events of the backward scan
SCAN_SLICE = 0.03  # seconds of backward scan per turn, so other files' tails are not kept waiting
PAINT_WAIT = 1.0  # seconds the backward scan waits for the tail to be on screen, at most
RETRY_OPEN = 1.0  # seconds between attempts to open a file that could not be opened


class Opened(Struct, frozen=True):
    """The file is open and its tail indexed: show it (then call `painted()`)."""

    index: LineIndex


class Failed(Struct, frozen=True):
    """The file could not be opened or read; `reason` is one line for the status."""

    reason: str


class Indexing(Struct, frozen=True):
    """The backward scan indexed `done` of `total` bytes; `complete`: line numbers are the
    file's own from now on."""

    index: LineIndex
    done: int
    total: int
    complete: bool


class Tailed(Struct, frozen=True):
    """What `refresh()` found (`change`); `before`: lines indexed before it, the last of them
    still open (no newline yet, so it may have grown) when `open_line`. Call `applied()` once
    it is on screen: no other `Tailed` comes before."""

    index: LineIndex
    change: Change
    before: int
    open_line: bool = False


FollowerEvent = Opened | Failed | Indexing | Tailed
StatKey = tuple[int, int, int, int, int]  # (dev, inode, size, mtime, path gone)


class LogFollower:
    """One log file, indexed and followed; served by a `LogWatcher` thread."""

    def __init__(
        self,
        path: Path | str,
        notify: Callable[[LogFollower, FollowerEvent], None],
        *,
        watcher: LogWatcher | None = None,
    ) -> None:
        """Follow `path`, sending events to `notify(self, event)` (on the watcher's thread)."""
        self.path = Path(path)
        self.notify = notify
        self.watcher = watcher or LogWatcher.shared()
        # set when the index reaches byte 0 (line numbers are the file's own); cleared on reset
        self.indexed = threading.Event()
        # run on the watcher's thread after the file grew, before `Tailed` is sent: finished
        # searches extend themselves over the new bytes there
        self.grown: list[Callable[[LineIndex], None]] = []
        self.stopped = False
        self._index: LineIndex | None = None
        self._painted = False
        self._awaiting = False  # a `Tailed` was sent and not yet applied
        self._asked = False  # `poll_now()`: the next look is answered, changed or not
        self._opened_at = 0.0
        self._open_after = 0.0  # when to try opening again after a failure
        self._failed = False
        self._stat: StatKey | None = None
        self._last_change = Change.NONE
        self._next_poll = 0.0
        self._progress_at = 0.0
        self._unreleased = 0  # bytes read since freed heap was last handed back

    # -- the reader's side (any thread) --------------------------------------------------------
    def start(self) -> None:
        """Begin: the watcher opens the file on its thread."""
        self.watcher.add(self)

    def stop(self) -> None:
        """End: the watcher closes the file on its thread (after the step under way)."""
        self.stopped = True
        self.watcher.wake()

    def painted(self) -> None:
        """The tail is on screen: the backward scan may start."""
        self._painted = True
        self.watcher.wake()

    def applied(self) -> None:
        """The last `Tailed` is on screen: the next read may come."""
        self._awaiting = False
        self.watcher.wake()

    def poll_now(self) -> None:
        """Look at the file now rather than at the next poll, and answer with a `Tailed` even
        when nothing changed (follow mode was turned on: the reader shows the end once it
        has the newest lines)."""
        self._asked = True
        self._next_poll = 0.0
        self.watcher.wake()

    # -- the watcher's side (its thread only) --------------------------------------------------
    def serve(self, now: float) -> float:
        """Do one bounded step; return when this follower next needs a turn."""
        index = self._index
        if index is None:
            return self._open(now)
        due = self._tail(index, now)
        if index.complete:
            if not self.indexed.is_set():  # a reset file that was all tail
                self._indexed(index)
            return due
        if self._painted or now - self._opened_at >= PAINT_WAIT:
            return now if not self._scan(index) else due
        return min(due, self._opened_at + PAINT_WAIT)

    def _send(self, event: FollowerEvent) -> None:
        self.notify(self, event)

    def fail(self, reason: str) -> None:
        """Tell the reader a step failed (the watcher says so when `serve` raised)."""
        self._send(Failed(reason))

    def close(self) -> None:
        """Release the file (the watcher calls it once `stop()` was seen)."""
        if self._index is not None:
            self._index.close()
            self._index = None

    def _open(self, now: float) -> float:
        if now < self._open_after:
            return self._open_after
        index = LineIndex(self.path)
        try:
            index.open()
            st, gone = index.stat()
        except OSError as exc:
            index.close()
            self._open_after = now + RETRY_OPEN
            if not self._failed:  # once: the status keeps saying it
                self._failed = True
                self._send(Failed(f"{self.path.name}: {exc.strerror or exc}"))
            return self._open_after
        self._index, self._failed = index, False
        self._stat = _key(st, gone)
        self._opened_at = now
        self._painted = False
        self._next_poll = now + POLL_SECONDS
        self._send(Opened(index))
        if index.complete:  # the tail was the whole file
            self._indexed(index)
        else:
            self.indexed.clear()
        return now

    def _scan(self, index: LineIndex) -> bool:
        """Index backwards for one slice; True once complete."""
        deadline = time.monotonic() + SCAN_SLICE

        def progress(done: int, total: int) -> None:
            now = time.monotonic()
            if now - self._progress_at >= PROGRESS_EVERY and done < total:
                self._progress_at = now
                self._send(Indexing(index, done, total, False))

        try:
            complete = index.scan_back(
                cancelled=lambda: self.stopped or time.monotonic() > deadline, progress=progress
            )
        except OSError as exc:
            self._send(Failed(f"read: {exc.strerror or exc}"))
            return True  # the next refresh finds out what happened to the file
        if complete:
            self._indexed(index)
        return complete

    def _indexed(self, index: LineIndex) -> None:
        self.indexed.set()
        self._send(Indexing(index, index.size, index.size, True))

    def _tail(self, index: LineIndex, now: float) -> float:
        """Read what the file grew by, when it changed and the last read was applied."""
        if self._awaiting:
            return now + POLL_SECONDS  # `applied()` wakes the watcher before that
        if now < self._next_poll:
            return self._next_poll
        self._next_poll = now + POLL_SECONDS
        asked, self._asked = self._asked, False
        try:
            st, gone = index.stat()  # removed: the open file may still grow
            key: StatKey | None = _key(st, gone)
            behind = st.st_size != index.size
        except OSError:
            key, behind = None, True
        if key == self._stat and not behind:
            if asked:
                self._awaiting = True
                self._send(Tailed(index, Change.NONE, index.line_count))
            return self._next_poll
        self._stat = key
        before, size = index.line_count, index.size
        try:
            open_line = size > 0 and index.read(size - 1, size) != b"\n"
            change = index.refresh(cancelled=lambda: self.stopped)
        except OSError as exc:
            self._send(Failed(f"read: {exc.strerror or exc}"))
            return self._next_poll
        if change is Change.RESET:
            self.indexed.clear()
            self._opened_at, self._painted = now, True  # scan at once: the screen is up
        elif change is Change.GREW:
            self._trim(index.size - size)
            if index.complete:
                for grown in list(self.grown):
                    grown(index)
        elif change is Change.MISSING:
            self._stat = None  # look again next poll
            if self._last_change is Change.MISSING and not asked:
                return self._next_poll  # said once: the status keeps saying it
        self._last_change = change
        if change is not Change.NONE or asked:
            self._awaiting = True
            self._send(Tailed(index, change, before, open_line))
        return self._next_poll

    def _trim(self, grew: int) -> None:
        self._unreleased += max(0, grew)
        if self._unreleased >= TRIM_AFTER:
            self._unreleased = 0
            release_freed_memory()


def _key(st: os.stat_result, gone: bool) -> StatKey:
    # a removal alone is a change too: the status says so
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, int(gone))
