"""Find, filter and the jumps (first error, a step) over one log file, and the threads that run
them.

A `Search` is a pattern and the lines it matched so far (`SearchState`). `SearchController`
holds the view's find and filter and starts a thread per search: not a worker of asyncio's
default pool, which a long search would hold while a user action waits. The thread waits on
the search's event until the index reaches byte 0 (line numbers are the file's own only then;
`index_complete()` sets it), scans the file, and hands the result over through the callbacks
the view gave (called on that thread). A finished find or filter stays current as the file
grows: `extend()` runs on the follower's thread with what was appended. Replacing or clearing a
search cancels it; its thread sees that at the next chunk and ends.
"""

from __future__ import annotations

import re
import threading
import time
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field

from rocmtui.core.logs.index import LineIndex
from rocmtui.core.logs.search import SearchState, scan
from rocmtui.core.logs.search_grep import GrepScan, start_from_start
from rocmtui.core.logs.search_split import scan_split

PROGRESS_EVERY = 0.3  # a search's partial results repaint the rows: not too often, it slows it


@dataclass(eq=False)
class Search:
    """One search: `kind` is "find", "filter" or "jump" (the first line only)."""

    kind: str
    text: str  # what was typed; for a jump, what to say when nothing matches
    state: SearchState
    done: bool = False
    cancelled: bool = False
    wake: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def pattern(self) -> re.Pattern[str]:
        """The compiled pattern."""
        return self.state.pattern

    @property
    def invert(self) -> bool:
        """A filter of the lines that do not match."""
        return self.state.invert

    @property
    def lines(self) -> int:
        """Lines found so far."""
        return len(self.state.lines)

    def cancel(self) -> None:
        """Stop it (its thread ends at the next chunk, or at once while waiting)."""
        self.cancelled = True
        self.wake.set()


Progressed = Callable[[Search, int, int], None]  # (search, bytes done, bytes in all)
Finished = Callable[[Search], None]


class SearchController:
    """The find, the filter and the last jump of one log view."""

    def __init__(self, progressed: Progressed, finished: Finished) -> None:
        """`progressed` and `finished` are called on the searches' threads."""
        self.find: Search | None = None
        self.filter: Search | None = None
        self.jump: Search | None = None
        self.match_no: int | None = None  # the 1-based match of the find n/N landed on
        self.index: LineIndex | None = None
        self._progressed = progressed
        self._finished = finished

    def searches(self) -> list[Search]:
        """The live searches (find, filter, jump)."""
        return [s for s in (self.find, self.filter, self.jump) if s is not None]

    # -- asking ----------------------------------------------------------------------------------
    def set_find(self, text: str, pattern: re.Pattern[str]) -> Search:
        """Search for `pattern` everywhere (replacing the find there was)."""
        if self.find is not None:
            self.find.cancel()
        self.match_no = None
        self.find = self._start(Search("find", text, SearchState(pattern)))
        return self.find

    def set_filter(self, text: str, pattern: re.Pattern[str], invert: bool = False) -> Search:
        """Keep the lines matching `pattern` (or with `invert`, the others)."""
        if self.filter is not None:
            self.filter.cancel()
        self.filter = self._start(Search("filter", text, SearchState(pattern, invert)))
        return self.filter

    def first_line(self, pattern: re.Pattern[str], missing: str) -> Search:
        """Find the first line matching `pattern` (`missing`: what to say if none does)."""
        if self.jump is not None:
            self.jump.cancel()
        self.jump = self._start(Search("jump", missing, SearchState(pattern)))
        return self.jump

    def clear_find(self) -> None:
        """No find."""
        if self.find is not None:
            self.find.cancel()
        self.find = self.match_no = None

    def clear_filter(self) -> None:
        """No filter."""
        if self.filter is not None:
            self.filter.cancel()
        self.filter = None

    def close(self) -> None:
        """Stop every search (the view goes away)."""
        for search in self.searches():
            search.cancel()
        self.find = self.filter = self.jump = None
        self.index = None

    def step(self, here: int, step: int) -> tuple[int, int] | str:
        """The find's next match after line `here` (`step` 1) or before it (-1), skipping
        lines the filter hides: (its 1-based number, its line), which it lands on; or why
        there is none."""
        find = self.find
        if find is None or not find.state.lines:
            return "no matches" if find else "nothing to find: press /"
        shown = self.filter.state.lines if self.filter is not None else None
        found = next_match(find.state.lines, here, step, shown)
        if found is None:
            return "no more matches" if step > 0 else "no earlier matches"
        self.match_no = found[0]
        return found

    # -- the file ---------------------------------------------------------------------------------
    def attach(self, index: LineIndex | None) -> None:
        """Search this index from now on: a new file, or the file was reset. The find and the
        filter start over on it; a jump under way is dropped."""
        self.index = index
        if self.jump is not None:
            self.jump.cancel()
            self.jump = None
        if self.find is not None:
            self.set_find(self.find.text, self.find.pattern)
        if self.filter is not None:
            self.set_filter(self.filter.text, self.filter.pattern, self.filter.invert)

    def index_complete(self) -> None:
        """The index reached byte 0: searches waiting for it go."""
        for search in self.searches():
            search.wake.set()

    def extend(self, index: LineIndex) -> None:
        """The file grew (called on the follower's thread): finished searches take in the new
        lines."""
        fd = index.fileno()
        if index is not self.index or fd is None:
            return
        for search in (self.find, self.filter):
            if search is not None and search.done and not search.cancelled:
                scan(fd, search.state, index.size, _cancelled(search))

    # -- the threads -------------------------------------------------------------------------
    def _start(self, search: Search) -> Search:
        index = self.index
        if index is not None:
            # grep starts here, as the key is handled: not after a thread's start and the
            # repaint the key brings, which would hold the GIL before it
            early: GrepScan | bool | None = _launch(search, index) if index.complete else False
            name = f"logview-{search.kind}"
            args = (search, index, early)
            threading.Thread(target=self._run, args=args, name=name, daemon=True).start()
        return search

    def _run(self, search: Search, index: LineIndex, early: GrepScan | bool | None) -> None:
        """Wait for the whole file to be indexed, then search it (on this search's thread);
        `early`: its grep started already (None: grep is not used; False: not tried yet)."""
        try:
            self._search(search, index, early)
        finally:
            if isinstance(early, GrepScan):
                early.close()  # (finished already, unless the search was dropped first)

    def _search(self, search: Search, index: LineIndex, early: GrepScan | bool | None) -> None:
        while True:
            search.wake.clear()  # before looking: a wake from now on ends the wait below
            if search.cancelled:
                return
            if index.complete:
                break
            search.wake.wait()
        fd = index.fileno()
        if fd is None:
            return
        # the first partial repaint only once the search has run a while: a 185 MB filter is
        # over in ~0.2 s, and rows painted from its first chunk took the GIL from it
        last = time.monotonic()

        def progress(done: int, total: int) -> None:
            nonlocal last
            now = time.monotonic()
            if now - last >= PROGRESS_EVERY:
                last = now
                self._progressed(search, done, total)

        def cancelled() -> bool:
            return search.cancelled

        try:
            if search.kind == "jump":  # the first line only: found early, as a rule
                scan(fd, search.state, index.size, cancelled, progress, limit=1)
            else:
                # a literal by grep (a compiled scan in a process of its own), else 2 cores
                run = _launch(search, index) if early is False else early
                done = run.finish(cancelled, progress) if isinstance(run, GrepScan) else None
                if done is None:
                    done = scan_split(fd, search.state, index.size, cancelled, progress)
                # the file may grow while we search: go on until caught up with the index
                while done and search.state.next_byte < index.size and not search.state.partial:
                    done = scan(fd, search.state, index.size, cancelled, progress)
        except OSError:
            return
        if search.cancelled:
            return
        search.done = True
        self._finished(search)


def _launch(search: Search, index: LineIndex) -> GrepScan | None:
    """The search's grep, started when it takes one (a find or a filter of a literal over a
    big file, see search_grep)."""
    fd = index.fileno()
    if search.kind == "jump" or fd is None:
        return None
    end, newlines = index.extent()
    try:
        return start_from_start(fd, search.state, end, newlines)
    except OSError:
        return None


def _cancelled(search: Search) -> Callable[[], bool]:
    return lambda: search.cancelled


def next_match(
    lines: array[int], here: int, step: int, shown: array[int] | None
) -> tuple[int, int] | None:
    """In sorted `lines`, the first after `here` (`step` 1) or the last before it (-1) that is
    also in `shown` (None: every line is): (its 1-based number in `lines`, the line)."""
    i = bisect_right(lines, here) if step > 0 else bisect_left(lines, here) - 1
    if shown is not None:  # skip matches the filter hides
        while 0 <= i < len(lines):
            r = bisect_left(shown, lines[i])
            if r < len(shown) and shown[r] == lines[i]:
                break
            i += step
    if not 0 <= i < len(lines):
        return None
    return i + 1, lines[i]
