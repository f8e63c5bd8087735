"""The log view's one-line prompt: find, filter, exclude, a line number or a step.

Opened by the view's keys (`open(mode)`), it takes the keyboard until Enter (`Submitted`, with
the text and the regex/case switches: the view acts on it, then calls `close()`) or escape
(`Closed`). While it is open, ^R switches between regex and literal and ^T cycles the case rule
(smart, sensitive, insensitive); those keys are catalog entries too (rocmtui/console/keys.py,
scope "logprompt").
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Input, Label

from rocmtui.console import keys

PROMPTS = {
    "find": "find",
    "filter": "filter",
    "exclude": "exclude",
    "goto": "line",
    "step": "step #",
}
SEARCHES = ("find", "filter", "exclude")  # the modes that take a pattern
CASES: dict[bool | None, str] = {None: "smart", True: "Aa", False: "aa"}


class LogPrompt(Horizontal):
    """A label and an input, one line, hidden until opened."""

    KEY_SCOPE: ClassVar[str] = "logprompt"  # its keys in the catalog
    BINDINGS: ClassVar[list[BindingType]] = list(keys.bindings(KEY_SCOPE))

    class Submitted(Message):
        """Enter: `text` for `mode`, with the regex and case switches as they were."""

        def __init__(self, mode: str, text: str, regex: bool, case: bool | None) -> None:
            super().__init__()
            self.mode, self.text, self.regex, self.case = mode, text, regex, case

    class Closed(Message):
        """The prompt closed (after Enter or escape): the keys go back to the log."""

    def __init__(self, *, id: str | None = None) -> None:
        """A closed prompt."""
        super().__init__(id=id)
        self.mode = "find"
        self.regex = True
        self.case: bool | None = None  # None: smart (sensitive iff the text has a capital)

    def compose(self) -> ComposeResult:
        """The label says what is asked; the input takes the answer."""
        yield Label("", id="logview-prompt-label")
        yield Input(id="logview-input", select_on_focus=False)

    @property
    def is_open(self) -> bool:
        """Whether it is shown and has the keys."""
        return self.has_class("-open")

    @property
    def label_text(self) -> str:
        """What the label says now (`find [.* smart] (^R ^T):`)."""
        label = PROMPTS.get(self.mode, self.mode)
        if self.mode in SEARCHES:
            label += f" [{'.*' if self.regex else 'lit'} {CASES[self.case]}] (^R ^T)"
        return label + ":"

    def open(self, mode: str) -> None:
        """Show the prompt for `mode`, empty, with the keys."""
        self.mode = mode
        self._show_label()
        self.add_class("-open")
        box = self.query_one(Input)
        box.value = ""
        # now, not after the next refresh: keys typed right after "/" belong to the prompt
        self.screen.set_focus(box)

    def close(self) -> None:
        """Hide it; the view gives the keys back to the log."""
        self.remove_class("-open")
        self.post_message(self.Closed())

    def _show_label(self) -> None:
        self.query_one(Label).update(Text(self.label_text))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter: say what was typed. The view closes the prompt once it has acted on it: a
        search starts first, not after the restyle that hiding the prompt costs."""
        event.stop()
        self.post_message(self.Submitted(self.mode, event.value.strip(), self.regex, self.case))

    def action_close(self) -> None:
        """escape: close without doing anything."""
        self.close()

    def action_toggle_regex(self) -> None:
        """^R: regex or literal text."""
        self.regex = not self.regex
        self._show_label()

    def action_cycle_case(self) -> None:
        """^T: smart case, then case-sensitive, then insensitive."""
        self.case = {None: True, True: False, False: None}[self.case]
        self._show_label()
