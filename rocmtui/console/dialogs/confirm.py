"""A confirmation that needs one explicit key (never Enter, so a double Enter cannot confirm).

The keys are the catalog's (`rocmtui.console.keys`): `confirm.yes` (y) and `confirm.no` (escape, n)
for a question about a build; `quit.yes` (q, so q q quits) and `quit.no` when quitting leaves
builds running. Both can be remapped in the fleet file's `[keys]`, and the dialog shows the key
that answers as the keymap has it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from rocmtui.console import keys, stylesheets


class Question(ModalScreen[bool]):
    """Ask one question; the `SCOPE`'s `yes` key answers yes, escape answers no."""

    CSS_PATH = stylesheets.LATER  # read already, unless shown before the first frame was

    SCOPE: ClassVar[str]

    def __init__(
        self,
        question: str | Text,
        label: str,
        *,
        keymap: Mapping[str, str] | None = None,
        details: str = "",
    ) -> None:
        super().__init__(classes="dialog")
        self.question = question
        self.yes_label = label
        self.details = details
        yes = keys.BY_ID[f"{self.SCOPE}.yes"]
        self.key = keys.display_key(yes.key, keymap or {}, yes.id)

    def compose(self) -> ComposeResult:
        """The question, what it affects, and the keys."""
        with Vertical(id="confirm-box"):
            q = self.question if isinstance(self.question, Text) else Text(self.question)
            yield Static(q, id="confirm-question", markup=False)
            if self.details:
                yield Static(Text(self.details), id="confirm-details", markup=False)
            line = Text()
            line.append(f" {self.key} ", style="bold reverse")
            line.append(f" {self.yes_label}    ")
            line.append(" esc ", style="bold reverse")
            line.append(" back")
            yield Static(line, id="confirm-keys", markup=False)

    def action_answer(self, yes: bool) -> None:
        """Close with the answer."""
        self.dismiss(yes)


class ConfirmDialog(Question):
    """Go ahead with what starts or stops a build? (`y` says yes.)"""

    SCOPE: ClassVar[str] = "confirm"
    BINDINGS: ClassVar[list[BindingType]] = list(keys.bindings("confirm"))


class QuitDialog(Question):
    """Quit although builds keep running? (`q` again says yes.)"""

    SCOPE: ClassVar[str] = "quit"
    BINDINGS: ClassVar[list[BindingType]] = list(keys.bindings("quit"))
