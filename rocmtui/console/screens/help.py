"""`?`: every key of the console on one page, read from the same catalog as the footer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import RichLog, Static

from rocmtui.console import keys, stylesheets

SCOPE_TITLES = {
    "app": "Everywhere",
    "fleet": "Fleet screen",
    "logs": "Log panes",
    "matrix": "Published (m)",
    "history": "History (h): what builds cost",
    "runs": "Runs (u): fleet runs, a lane per node, compared",
    "table": "In a table (fleet panels, published grid)",
    "bake": "Bake dialog (b, r)",
    "newrun": "New fleet run (R)",
    "confirm": "A question before a build starts or stops",
    "quit": "Quit while builds run",
    "cell": "A cell's detail (Enter on the published screen)",
    "help": "This page",
}


def help_table(keymap: Mapping[str, str], read_only: bool) -> Text:
    """The catalog as aligned text: key, what it does, its id (for `[keys]` in the fleet file).

    Plain `Text`, not a rich `Table`: the help screen opens over a log that repaints many times
    a second, and a Table re-measures every column on each render.
    """
    rows: list[tuple[str, Text, str]] = []
    for scope, title in SCOPE_TITLES.items():
        rows.append(("", Text(title, style="underline"), ""))
        scopes = (scope, *keys.WIDGET_SCOPES.get(scope, ()))
        for entry in (k for s in scopes for k in keys.CATALOG if k.scope == s):
            what = Text(entry.description)
            if entry.dangerous:
                what.append(" (off: read-only)" if read_only else " !", style="dim")
            rows.append((keys.display_key(entry.key, keymap, entry.id), what, entry.id))
        rows.append(("", Text(""), ""))
    rows.append(("ctrl+p", Text("command palette"), ""))
    rows.append(("tab", Text("next panel"), ""))
    key_width = max(len(k) for k, _, _ in rows)
    # the titles have no id beside them: a long one must not push every id off 80 columns
    what_width = max(w.cell_len for _, w, binding_id in rows if binding_id)
    out = Text()
    for key, what, binding_id in rows:
        out.append(key.rjust(key_width), style="bold")
        out.append("  ")
        out.append_text(what)
        out.append(" " * (what_width - what.cell_len + 2))
        out.append(binding_id + "\n", style="dim")
    # notes after the table, so their length does not push the ids off an 80-column screen
    out.append("\n")
    out.append("!".rjust(key_width), style="bold")
    out.append("  starts or stops a build: hidden and refused when read-only\n")
    out.append(" " * (key_width + 2) + "the palette (ctrl+p) finds every action by name\n")
    out.append(" " * (key_width + 2) + "probes come from `rocmtui monitor` when one runs for\n")
    out.append(" " * (key_width + 2) + "this fleet file (status line: shared monitor)\n")
    return out


class HelpScreen(ModalScreen[None]):
    """The keys, with the ids that remap them."""

    CSS_PATH = stylesheets.LATER  # read already, unless shown before the first frame was

    SCOPE: ClassVar[str] = "help"
    BINDINGS: ClassVar[list[BindingType]] = list(keys.bindings("help"))

    def __init__(self, keymap: Mapping[str, str], read_only: bool) -> None:
        super().__init__(id="help", classes="dialog")
        self.keymap = keymap
        self.read_only = read_only

    def compose(self) -> ComposeResult:
        """A title, then the keys in a line-based scroller (80×24 cannot show them all; a
        scroll container would re-lay out its content on every frame of a busy log below)."""
        with Vertical(id="help-box"):
            yield Static(
                Text(
                    'Keys — remap any of them in the fleet file\'s [keys] table (id = "key")',
                    style="bold",
                )
            )
            lines = RichLog(
                id="help-lines", wrap=False, markup=False, highlight=False, auto_scroll=False
            )
            lines.write(help_table(self.keymap, self.read_only))
            yield lines

    def action_dismiss_help(self) -> None:
        """Close."""
        self.dismiss(None)
