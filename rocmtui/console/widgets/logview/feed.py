"""The log view's file as the screen knows it: which index is shown, whether it could be read, how
far the backward scan got, kept in step with its follower's events (on the event loop).

`LogFeed` starts a `LogFollower` for a path and applies each event the follower sends to the
body (rows, caches, scroll) and to the searches (a new or reset file starts them over; a finished
scan lets waiting ones go). What the view should tell its parent comes back as a `Said`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from msgspec import Struct

from rocmtui.console.widgets.logview.body import LogBody
from rocmtui.console.widgets.logview.follower import (
    Failed,
    FollowerEvent,
    Indexing,
    LogFollower,
    Opened,
    Tailed,
)
from rocmtui.console.widgets.logview.search import SearchController
from rocmtui.console.widgets.logview.watcher import LogWatcher
from rocmtui.core.logs.index import Change, LineIndex

Notify = Callable[[LogFollower, FollowerEvent], None]


class Said(Struct, frozen=True):
    """What an event means to the view's parent: the file was reset or failed (`reset`: why),
    or the backward scan moved on (`indexed`: done, total)."""

    reset: str | None = None
    indexed: tuple[int, int] | None = None


class LogFeed:
    """One view's file: its follower, the index on screen, and what went wrong."""

    def __init__(self, body: LogBody, search: SearchController, watcher: LogWatcher | None) -> None:
        """Feed `body` and `search`; `watcher`: the thread that reads (None: the shared one)."""
        self.body = body
        self.search = search
        self.watcher = watcher
        self.follower: LogFollower | None = None
        self.index: LineIndex | None = None  # the index on screen (from the follower's Opened)
        self.error: str | None = None  # why the file cannot be read, while it cannot
        self.indexing: tuple[int, int] | None = None  # bytes indexed of total

    def open(self, path: Path, notify: Notify, follow: bool) -> None:
        """Follow `path` from now on (the file shown before is let go)."""
        self.close()
        self.search.attach(None)
        self.body.show_file(None, follow)
        self.follower = LogFollower(path, notify, watcher=self.watcher)
        self.follower.grown.append(self.search.extend)
        self.follower.start()

    def close(self) -> None:
        """Stop following (the watcher closes the file)."""
        if self.follower is not None:
            self.follower.stop()
        self.follower = None
        self.index = None

    def poll_now(self) -> bool:
        """Read what the file grew by now, not at the next poll: the answer comes as a
        `Tailed` (changed or not). False when there is no file to read."""
        if self.follower is None or self.index is None:
            return False
        self.follower.poll_now()
        return True

    def apply(self, follower: LogFollower, event: FollowerEvent, follow: bool) -> Said | None:
        """Show what `follower` found; None when it is not this view's any more."""
        if follower is not self.follower:
            return None
        if isinstance(event, Failed):
            self.error = event.reason
            return Said(reset=event.reason)
        if isinstance(event, Opened):
            self.index, self.error = event.index, None
            self.search.attach(event.index)
            self.body.show_file(event.index, follow)
            self.body.call_after_refresh(follower.painted)  # then the backward scan starts
        elif isinstance(event, Indexing):
            self.indexing = (event.done, event.total)
            if event.complete:
                self.search.index_complete()
            self.body.show_more(follow)
            return Said(indexed=self.indexing)
        elif isinstance(event, Tailed):
            said = self._tailed(event, follow)
            follower.applied()  # shown: the next read may come
            return said
        return Said()

    def _tailed(self, event: Tailed, follow: bool) -> Said:
        if event.change is Change.RESET:
            self.search.attach(event.index)
            rows = self.search.filter.state.lines if self.search.filter else None
            self.body.show_reset(rows, follow)
            return Said(reset="truncated or replaced")
        if event.change is Change.GREW:
            self.body.show_growth(event.before, follow, event.open_line)
        elif follow:  # an answer to `poll_now()`: follow mode shows the end from now on
            self.body.show_more(follow)
        return Said()  # MISSING: the path is gone; the status says so
