"""LogView: a build log of any size, followed live, found in, filtered, copied from.

    LogView(path, follow=True)        # embed it; .set_path(other) to switch files

The view composes objects that each do one job, and does no file I/O on the event loop:
- a `LogFollower` (follower.py) owns the file's `LineIndex`: it opens the file, indexes it tail
  first, then backwards, and reads what it grew by, on the process's one watcher thread
  (watcher.py); its events arrive here as `Followed` messages, one per read, and the
  `LogFeed` (feed.py) applies them to the body and the searches;
- a `SearchController` (search.py) runs find, filter and the jumps on threads of their own,
  which `LogQueries` (queries.py) starts from a pattern and reports up;
- the `LogBody` (body.py) scrolls, and its `LineRenderer` (render.py) turns the lines on screen
  into strips; a `Navigator` (navigate.py) moves about it;
- a `LogPrompt` (prompt.py) asks for a pattern, a line or a step; status.py words the status.
Keys are data (rocmtui/console/keys.py, scope "logview": remappable by id). The view sends
`Progress`, `FindChanged`, `FilterChanged`, `FollowChanged`, `FileReset` and `Copied` up.
Copying uses OSC 52 through `App.copy_to_clipboard`, only when asked, with sanitised text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.reactive import reactive
from textual.widgets import Static

from rocmtui.console import keys
from rocmtui.console.widgets.logview import messages as msgs
from rocmtui.console.widgets.logview.body import LogBody
from rocmtui.console.widgets.logview.feed import LogFeed
from rocmtui.console.widgets.logview.follower import FollowerEvent, LogFollower
from rocmtui.console.widgets.logview.navigate import Navigator
from rocmtui.console.widgets.logview.prompt import LogPrompt
from rocmtui.console.widgets.logview.queries import LogQueries
from rocmtui.console.widgets.logview.render import LINE_CLASSES
from rocmtui.console.widgets.logview.search import Search, SearchController
from rocmtui.console.widgets.logview.selection import copy_text
from rocmtui.console.widgets.logview.status import gather, status_line
from rocmtui.console.widgets.logview.watcher import LogWatcher
from rocmtui.core.logs.index import LineIndex


class LogView(Vertical):
    """A log file, shown from the end first, followed as it grows. See the module docstring."""

    KEY_SCOPE: ClassVar[str] = "logview"  # its keys in the catalog (the palette finds them)
    BINDINGS: ClassVar[list[BindingType]] = list(keys.bindings(KEY_SCOPE))
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

    # messages (messages.py); a parent's handlers are on_log_view_<name>
    Progress = msgs.Progress
    FindChanged = msgs.FindChanged
    FilterChanged = msgs.FilterChanged
    FollowChanged = msgs.FollowChanged
    FileReset = msgs.FileReset
    Copied = msgs.Copied

    def __init__(
        self,
        path: Path | str | None = None,
        follow: bool = True,
        *,
        watcher: LogWatcher | None = None,
        line_classes: Sequence[tuple[str, re.Pattern[str]]] = LINE_CLASSES,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        """Show `path` (or nothing until `set_path`), following it when `follow`. `watcher`:
        the thread that reads the file (default: the process's own); `line_classes`: how lines
        are classed for styling (render.py)."""
        super().__init__(name=name, id=id, classes=classes)
        self.path: Path | None = Path(path) if path is not None else None
        self.set_reactive(LogView.follow, follow)
        self.search = SearchController(self._search_progressed, self._search_finished)
        self.body = LogBody(id="logview-body")
        self.body.renderer.line_classes = tuple(line_classes)
        self.body.stick_to_end = follow
        self.feed = LogFeed(self.body, self.search, watcher)
        self.navigator = Navigator(self.body, self.search)
        self.prompt = LogPrompt(id="logview-prompt")
        #: Find, filter and the jumps (queries.py).
        self.queries = LogQueries(
            self, self.body, self.search, self.navigator, lambda: self.follow, self._status
        )
        self._status_text = ""

    def compose(self) -> ComposeResult:
        """Body, a one-line prompt (hidden) and a status line."""
        yield self.body
        yield self.prompt
        yield Static("", id="logview-status", markup=False)

    def on_mount(self) -> None:
        """Start reading the file."""
        self.body.on_user_scroll_up = self._user_scrolled_up
        self.body.on_user_end = self.action_bottom
        self.body.on_view_moved = self._status
        if self.path is not None:
            self.feed.open(self.path, self._followed, self.follow)

    def on_unmount(self) -> None:
        """Stop following and searching: the watcher closes the file."""
        self.feed.close()
        self.search.close()

    def set_path(self, path: Path | str) -> None:
        """Show another file (searches are dropped; follow mode is kept)."""
        self.path = Path(path)
        self.search.clear_find()
        self.search.clear_filter()
        self.body.look.find = None
        self.body.rows = None
        if self.is_mounted:
            self.feed.open(self.path, self._followed, self.follow)

    def _followed(self, follower: LogFollower, event: FollowerEvent) -> None:
        """From the watcher's thread: on to the event loop, as a message."""
        self.post_message(msgs.Followed(follower, event))

    # -- public API ----------------------------------------------------------------------------
    @property
    def index(self) -> LineIndex | None:
        """The file's index as it is on screen (None until the file is open)."""
        return self.feed.index

    @property
    def line_count(self) -> int:
        """Lines of the file indexed so far."""
        return self.index.line_count if self.index is not None else 0

    @property
    def index_complete(self) -> bool:
        """True once every line of the file (so far) is indexed and numbered."""
        return self.index is not None and self.index.complete

    @property
    def status_text(self) -> str:
        """The status line as it is on screen."""
        return self._status_text

    def screen_text(self) -> list[str]:
        """Plain text of each row of the body as it is on screen now."""
        return self.body.screen_text()

    def find(self, text: str | None, *, regex: bool = True, case: bool | None = None) -> None:
        """Highlight `text` everywhere (`None` clears); n/N then walk the matches."""
        self.queries.find(text, regex=regex, case=case)

    def set_filter(
        self,
        text: str | None,
        *,
        invert: bool = False,
        regex: bool = True,
        case: bool | None = None,
    ) -> None:
        """Show only the lines matching `text` (or with `invert`, the others); None: all."""
        self.queries.set_filter(text, invert=invert, regex=regex, case=case)

    def goto_first_error(self) -> None:
        """Jump to the first error line (a compiler's, ninja's, BuildKit's; not a warning)."""
        self.queries.goto_first_error()

    def goto_step(self, step: str | int) -> None:
        """Jump to the first line of BuildKit step `#step`."""
        self.queries.goto_step(step)

    def goto_step_named(self, name: str) -> None:
        """Jump to the header line of the BuildKit step named `name`: where a timeline's step
        begins in the plain log."""
        self.queries.goto_step_named(name)

    def goto_line(self, number: int) -> None:
        """Show file line `number` (1-based), marked; under a filter, the first shown line
        from it. (A jump to the first error or a step lands here too.)"""
        self.follow = False
        self.navigator.land_on(number - 1)
        self._status()

    # -- what the follower found ---------------------------------------------------------------
    def on_log_view_followed(self, message: msgs.Followed) -> None:
        """The watcher opened, indexed or read the file."""
        message.stop()
        said = self.feed.apply(message.follower, message.event, self.follow)
        if said is None:
            return  # from a file this view no longer shows
        if said.reset is not None:
            self.post_message(self.FileReset(self, said.reset))
        if said.indexed is not None:
            self.post_message(self.Progress(self, "index", *said.indexed))
        self._status()  # a removed path (Tailed MISSING) shows there too

    def on_log_view_update(self, message: msgs.Update) -> None:
        """Coalesced: a search moved on, or the body's size changed."""
        message.stop()
        self.body.show_more(self.follow)
        self._status()

    # -- what the searches found ---------------------------------------------------------------
    def _search_progressed(self, search: Search, done: int, total: int) -> None:
        """From a search thread."""
        self.post_message(msgs.Update())
        self.post_message(self.Progress(self, search.kind, done, total))

    def _search_finished(self, search: Search) -> None:
        """From a search thread."""
        if search.kind != "jump":
            size = self.index.size if self.index is not None else 0
            self.post_message(self.Progress(self, search.kind, size, size))
        self.post_message(msgs.Searched(search))

    def on_log_view_searched(self, message: msgs.Searched) -> None:
        """A search finished: show it (a jump: go there)."""
        message.stop()
        search = message.search
        if search.cancelled:
            return
        if search.kind == "jump":
            if search.state.lines:
                self.goto_line(search.state.lines[0] + 1)
            else:
                self.notify(search.text, severity="warning", markup=False)
            return
        self.body.show_more(self.follow)
        self._status()
        if search is self.search.find and self.search.match_no is None and not self.follow:
            self._step_match(1, quiet=True)
        self.queries.report()

    # -- modes ----------------------------------------------------------------------------------
    def _user_scrolled_up(self) -> None:
        if self.follow:
            self.follow = False

    def watch_follow(self, follow: bool) -> None:
        """Jump to the end when follow goes on; tell the parent either way."""
        self.body.stick_to_end = follow
        # the end is shown once what was written while paused is read (at once): showing the
        # end as it was first would paint every row twice, the first time stale
        if follow and self.is_mounted and not self.feed.poll_now():
            self.body.sync(follow=True)
        self.post_message(self.FollowChanged(self, follow))
        self._status()

    def watch_wrap(self, wrap: bool) -> None:
        """Re-lay the rows out."""
        self.body.look.wrap = wrap
        self.body.restyle()  # the styled lines stay cached; only their layout changes
        self.body.sync(follow=self.follow)
        self._status()

    def watch_dim(self, dim: bool) -> None:
        """Dim or undim the lines without a match."""
        self.body.look.dim = dim
        self.body.restyle()
        self._status()

    def _status(self) -> None:
        if not self.is_mounted:
            return
        line = status_line(gather(self.path, self.feed, self.body, self.search, self.follow))
        if line != self._status_text:  # one row, fixed size: no layout pass needed
            self._status_text = line
            self.query_one("#logview-status", Static).update(line, layout=False)

    # -- keys (the catalog's "logview" scope) ----------------------------------------------------
    def action_toggle_follow(self) -> None:
        """f: follow on/off."""
        self.follow = not self.follow

    def action_toggle_wrap(self) -> None:
        """w: wrap long lines on/off."""
        self.wrap = not self.wrap

    def action_toggle_dim(self) -> None:
        """d: dim lines without a match."""
        self.dim = not self.dim

    def action_top(self) -> None:
        """g: first line."""
        self.follow = False
        self.body.scroll_to_row(0, context=0)

    def action_bottom(self) -> None:
        """G: last line, and follow."""
        self.follow = True

    def action_next_match(self, step: int) -> None:
        """n / N: next / previous match."""
        self._step_match(step)

    def _step_match(self, step: int, quiet: bool = False) -> None:
        why = self.navigator.step_match(step)
        if why is not None:
            if not quiet:
                self.notify(why, markup=False)
            return
        self.follow = False
        self.queries.report()
        self._status()

    def action_first_error(self) -> None:
        """e: first error."""
        self.goto_first_error()

    def action_prompt(self, mode: str) -> None:
        """/, F, !, :, s: open the prompt."""
        self.prompt.open(mode)

    def on_log_prompt_closed(self, message: LogPrompt.Closed) -> None:
        """The keys go back to the log."""
        message.stop()
        self.body.focus()

    def on_log_prompt_submitted(self, message: LogPrompt.Submitted) -> None:
        """Enter in the prompt: do what it was opened for, then close it (a search's grep
        starts before the restyle that closing costs)."""
        message.stop()
        try:
            self._submitted(message)
        finally:
            self.prompt.close()

    def _submitted(self, message: LogPrompt.Submitted) -> None:
        text, mode, regex, case = message.text, message.mode, message.regex, message.case
        if mode == "find":
            self.find(text or None, regex=regex, case=case)
        elif mode in ("filter", "exclude"):
            self.set_filter(text or None, invert=mode == "exclude", regex=regex, case=case)
        elif mode == "goto" and text:
            if text.replace(",", "").isdigit():
                self.goto_line(int(text.replace(",", "")))
            else:
                self.notify("a line number, please", severity="warning")
        elif mode == "step" and text:
            self.goto_step(text)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Escape only clears when there is something to clear (else it goes to the screen)."""
        if action == "clear":
            search = self.search
            return bool(search.find or search.filter or self.body.selection.active)
        return True

    def action_clear(self) -> None:
        """escape: end selection, else clear find and filter."""
        if not self.navigator.unselect():
            if self.search.find is not None:
                self.find(None)
            if self.search.filter is not None:
                self.set_filter(None)
        self._status()

    def action_select(self) -> None:
        """v: start (or restart) selecting lines; up/down extend, y copies."""
        self.follow = False
        self.navigator.select()
        self._status()

    def action_copy(self) -> None:
        """y: copy the selected lines (or the screen) to the clipboard via OSC 52."""
        lines = self.navigator.lines_to_copy()
        if lines and self.index is not None:
            self._copy_worker(self.index, lines)

    @work(thread=True, exclusive=True, group="logview-copy", exit_on_error=False)
    def _copy_worker(self, index: LineIndex, lines: list[int]) -> None:
        text, count = copy_text(index, lines)
        self.app.call_from_thread(self._copied, text, count)

    def _copied(self, text: str, count: int) -> None:
        self.app.copy_to_clipboard(text)
        self.navigator.unselect()
        self.notify(f"copied {count:,} line{'s' if count != 1 else ''}", markup=False)
        self.post_message(self.Copied(self, count, len(text)))
        self._status()
