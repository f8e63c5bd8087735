"""`?`: every key of the console on one page, read from the same catalog as the footer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from rocmtui.app import keys

SCOPE_TITLES = {"app": "Everywhere", "fleet": "Fleet screen", "logs": "Log panes"}


def help_table(keymap: Mapping[str, str], read_only: bool) -> Table:
    """The catalog as a table: key, what it does, its id (for `[keys]` in the fleet file)."""
    table = Table.grid(padding=(0, 2))
    table.add_column(justify="right", style="bold")
    table.add_column()
    table.add_column(style="dim")
    for scope, title in SCOPE_TITLES.items():
        table.add_row(Text(title, style="underline"), "", "")
        for entry in keys.CATALOG:
            if entry.scope != scope:
                continue
            what = Text(entry.description)
            if entry.dangerous:
                what.append(" (off: read-only)" if read_only else " !", style="dim")
            table.add_row(keys.display_key(entry.key, keymap, entry.id), what, entry.id)
        if scope == "logs":
            for key, what_text in keys.LOG_VIEW_KEYS:
                table.add_row(key, what_text, "log view")
        table.add_row("", "", "")
    table.add_row("ctrl+p", "command palette (every action by name)", "")
    table.add_row("tab", "next panel", "")
    return table


class HelpScreen(ModalScreen[None]):
    """The keys, with the ids that remap them."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "dismiss_help", "Close", id="help.close"),
    ]

    def __init__(self, keymap: Mapping[str, str], read_only: bool) -> None:
        super().__init__(id="help", classes="dialog")
        self.keymap = keymap
        self.read_only = read_only

    def compose(self) -> ComposeResult:
        """The table in a scroll box (80×24 cannot show it all)."""
        with VerticalScroll(id="help-box"):
            yield Static(
                Text(
                    'Keys — remap any of them in the fleet file\'s [keys] table (id = "key")',
                    style="bold",
                )
            )
            yield Static(help_table(self.keymap, self.read_only))

    def action_dismiss_help(self) -> None:
        """Close."""
        self.dismiss(None)
