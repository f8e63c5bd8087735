"""Enter on a cell of the published screen: all it knows (every label and note), scrollable."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from rocmtui.console import keys, stylesheets


class CellDetailScreen(ModalScreen[None]):
    """One cell's whole detail (the keys: the catalog's `cell` scope)."""

    CSS_PATH = stylesheets.LATER  # read already, unless shown before the first frame was

    SCOPE: ClassVar[str] = "cell"
    BINDINGS: ClassVar[list[BindingType]] = list(keys.bindings("cell"))

    def __init__(self, text: Text) -> None:
        super().__init__(classes="dialog", id="cell-dialog")
        self.text = text

    def compose(self) -> ComposeResult:
        """The detail in a scroller."""
        with Vertical(id="cell-box"), VerticalScroll():
            yield Static(self.text, markup=False)

    def action_close(self) -> None:
        """Back to the matrix."""
        self.dismiss(None)
