"""A confirmation that needs one explicit key (never Enter, so a double Enter cannot confirm)."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static


class ConfirmDialog(ModalScreen[bool]):
    """Ask one question; `key` answers yes, escape answers no."""

    def __init__(self, question: str | Text, key: str, label: str, *, details: str = "") -> None:
        super().__init__(classes="dialog")
        self.question = question
        self.key = key
        self.label = label
        self.details = details
        self._bindings.bind(key, "answer(True)", label, show=True)

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "answer(False)", "Back", id="confirm.no"),
        Binding("n", "answer(False)", "No", show=False),
    ]

    def compose(self) -> ComposeResult:
        """The question, what it affects, and the keys."""
        with Vertical(id="confirm-box"):
            q = self.question if isinstance(self.question, Text) else Text(self.question)
            yield Static(q, id="confirm-question", markup=False)
            if self.details:
                yield Static(Text(self.details), id="confirm-details", markup=False)
            keys = Text()
            keys.append(f" {self.key} ", style="bold reverse")
            keys.append(f" {self.label}    ")
            keys.append(" esc ", style="bold reverse")
            keys.append(" back")
            yield Static(keys, id="confirm-keys", markup=False)

    def action_answer(self, yes: bool) -> None:
        """Close with the answer."""
        self.dismiss(yes)
