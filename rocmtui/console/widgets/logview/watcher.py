"""One thread that serves every followed log file of the process.

A thread of asyncio's default pool per followed file would be held for as long as its pane is
open; the pool has min(32, cores + 4) threads (6 on 2 cores), so five open panes would starve
every other worker of the console. A `LogWatcher` (toolong's watcher.py shape) is one daemon
thread for all of them: it gives each `LogFollower` a bounded turn (open, a slice of the
backward scan, a read of what was appended), then sleeps until the next follower is due or one
of them wakes it. It starts with its first follower and ends when the last one stopped, so an
app that closed its panes holds no thread at all.

One long-lived thread also keeps one malloc arena: a thread per read would leave an arena per
thread holding freed read buffers, and RSS would creep up while following.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import ClassVar, Protocol

from rocmtui.console.performance import tune_malloc

IDLE_WAIT = 0.5  # seconds asleep at most when no follower said when it is next due

log = logging.getLogger(__name__)


class Served(Protocol):
    """What the watcher needs of a follower (follower.py's `LogFollower`)."""

    path: Path
    stopped: bool

    def serve(self, now: float) -> float:
        """One bounded step; when the next is due."""

    def close(self) -> None:
        """Release the file; called on the watcher's thread once `stopped`."""

    def fail(self, reason: str) -> None:
        """Tell the reader a step failed."""


class LogWatcher:
    """A thread serving followers; `LogWatcher.shared()` is the process's own."""

    _shared: ClassVar[LogWatcher | None] = None
    _shared_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, name: str = "rocmtui-log-watcher") -> None:
        """A watcher whose thread starts with its first follower."""
        self.name = name
        self._lock = threading.Lock()
        self._followers: list[Served] = []
        self._thread: threading.Thread | None = None
        self._wake = threading.Event()

    @classmethod
    def shared(cls) -> LogWatcher:
        """The watcher every log view of this process uses unless given another."""
        with cls._shared_lock:
            if cls._shared is None:
                cls._shared = cls()
            return cls._shared

    @property
    def followers(self) -> int:
        """Followers being served (a stopped one counts until its file is closed)."""
        with self._lock:
            return len(self._followers)

    @property
    def running(self) -> bool:
        """Whether the thread is alive."""
        with self._lock:
            return self._thread is not None and self._thread.is_alive()

    def add(self, follower: Served) -> None:
        """Serve `follower` (starts the thread if it is not running)."""
        with self._lock:
            if follower not in self._followers:
                self._followers.append(follower)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                self._thread.start()
        self._wake.set()

    def wake(self) -> None:
        """A follower has something to do now (it was painted, applied, stopped)."""
        self._wake.set()

    def _run(self) -> None:
        tune_malloc()  # the mmap threshold is fixed before the first read buffer
        while True:
            self._wake.clear()  # before the turns: a wake during them cuts the sleep short
            with self._lock:
                followers = list(self._followers)
                if not followers:
                    self._thread = None
                    return
            now = time.monotonic()
            due = now + IDLE_WAIT
            for follower in followers:
                if follower.stopped:
                    self._drop(follower)
                    continue
                due = min(due, self._turn(follower, now))
            pause = due - time.monotonic()
            if pause > 0:
                self._wake.wait(pause)

    def _turn(self, follower: Served, now: float) -> float:
        """One follower's step; a failure of one never stops the others."""
        try:
            return follower.serve(now)
        except Exception as exc:  # a bug, or a file system gone strange: say it, go on
            log.exception("following %s", follower.path)
            try:
                follower.fail(f"follow: {type(exc).__name__}: {exc}"[:200])
            except Exception:
                log.exception("telling the view about %s", follower.path)
            return now + IDLE_WAIT

    def _drop(self, follower: Served) -> None:
        try:
            follower.close()
        finally:
            with self._lock:
                if follower in self._followers:
                    self._followers.remove(follower)
