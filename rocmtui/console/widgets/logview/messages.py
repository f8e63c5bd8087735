"""Messages the log view sends up (as `LogView.Progress` ...; handlers `on_log_view_progress`),
and the ones its own threads send it.

Each public message carries the `LogView` that sent it, so a screen with several log panes knows
which; typed as a `Widget`, because the view imports this module. The internal ones
(`Followed`, `Searched`, `Update`) carry what a thread found to the event loop; they are stopped
by the view and never reach its parent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.message import Message
from textual.widget import Widget

from rocmtui.console.widgets.logview.follower import FollowerEvent, LogFollower

if TYPE_CHECKING:
    from rocmtui.console.widgets.logview.search import Search


class Progress(Message, namespace="log_view"):
    """A background task moved on: `task` is "index", "find" or "filter"; done of total."""

    def __init__(self, log_view: Widget, task: str, done: int, total: int) -> None:
        super().__init__()
        self.log_view, self.task, self.done, self.total = log_view, task, done, total

    def can_replace(self, message: Message) -> bool:
        """Only the latest progress of a task matters."""
        return isinstance(message, Progress) and message.task == self.task


class FindChanged(Message, namespace="log_view"):
    """Find results: `matches` lines so far; `current` is the 1-based match landed on."""

    def __init__(
        self, log_view: Widget, text: str | None, matches: int, current: int | None, done: bool
    ) -> None:
        super().__init__()
        self.log_view, self.text, self.matches = log_view, text, matches
        self.current, self.done = current, done


class FilterChanged(Message, namespace="log_view"):
    """Filter results: `lines` shown so far (`invert`: lines that do not match)."""

    def __init__(
        self, log_view: Widget, text: str | None, invert: bool, lines: int, done: bool
    ) -> None:
        super().__init__()
        self.log_view, self.text, self.invert = log_view, text, invert
        self.lines, self.done = lines, done


class FollowChanged(Message, namespace="log_view"):
    """Follow mode went on or off."""

    def __init__(self, log_view: Widget, follow: bool) -> None:
        super().__init__()
        self.log_view, self.follow = log_view, follow


class FileReset(Message, namespace="log_view"):
    """The file was truncated, rewritten or replaced (`reason`), or could not be read."""

    def __init__(self, log_view: Widget, reason: str) -> None:
        super().__init__()
        self.log_view, self.reason = log_view, reason


class Copied(Message, namespace="log_view"):
    """Lines went to the clipboard (OSC 52)."""

    def __init__(self, log_view: Widget, lines: int, chars: int) -> None:
        super().__init__()
        self.log_view, self.lines, self.chars = log_view, lines, chars


# -- internal: from the view's threads to the view ---------------------------------------------
class Followed(Message, namespace="log_view"):
    """Internal: `follower` opened, indexed or read its file (`event`)."""

    def __init__(self, follower: LogFollower, event: FollowerEvent) -> None:
        super().__init__()
        self.follower, self.event = follower, event


class Searched(Message, namespace="log_view"):
    """Internal: a search thread finished `search` (a jump's search too)."""

    def __init__(self, search: Search) -> None:
        super().__init__()
        self.search = search


class Update(Message, namespace="log_view"):
    """Internal: a search moved on (or the body's size changed); coalesced, one per frame."""

    def can_replace(self, message: Message) -> bool:
        """Any queued update says the same."""
        return isinstance(message, Update)
