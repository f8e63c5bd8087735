"""Shared pieces of the fleet screen's panels: a panel that can show its own fault, a status
line, and the colours of the state words taken from the theme (the tables are in
rocmtui/console/widgets/table.py).
"""

from __future__ import annotations

from msgspec import Struct
from rich.style import Style
from rich.text import Text
from textual.app import App, ComposeResult
from textual.containers import Vertical
from textual.widget import Widget
from textual.widgets import Static

from rocmtui.console.backend.views import SEVERITY
from rocmtui.console.outside_text import clean, literal


class Palette(Struct, frozen=True):
    """Rich styles for each severity, resolved from the current theme's variables.

    Cells are rich `Text` (outside text must never be markup), so the theme's `$success`,
    `$error` ... are resolved here once per theme instead of in the stylesheet.
    """

    good: Style
    busy: Style
    alarm: Style
    bad: Style
    warn: Style
    muted: Style
    accent: Style

    @classmethod
    def from_app(cls, app: App[object]) -> Palette:
        """Resolve the palette from the variables Textual made for the app's theme (when it
        started, and again on a new theme before `theme_changed_signal`). Asking
        `get_css_variables` made them all again: ~3.5 M instructions on the way to the first
        frame."""
        v = app.theme_variables

        def color(name: str, fallback: str) -> str:
            value = v.get(name, fallback)
            return value[:7] if value.startswith("#") else fallback

        return cls(
            good=Style(color=color("text-success", "green")),
            busy=Style(color=color("text-primary", "cyan"), bold=True),
            alarm=Style(
                color=color("foreground", "white"), bgcolor=color("error", "red"), bold=True
            ),
            bad=Style(color=color("text-error", "red"), bold=True),
            warn=Style(color=color("text-warning", "yellow")),
            muted=Style(dim=True),
            accent=Style(color=color("text-accent", "yellow"), bold=True),
        )

    def for_state(self, word: str) -> Style:
        """The style of a state word (ok, building, stalled, down ...)."""
        style: Style = getattr(self, SEVERITY.get(word, "muted"))
        return style


def state_cell(word: str, symbol: str, palette: Palette) -> Text:
    """A state word with its symbol: reads with colour, without colour, and in a screen reader."""
    return Text(f"{symbol} {clean(word, 12)}", style=palette.for_state(word), no_wrap=True)


def waiting_cell(palette: Palette) -> Text:
    """In place of a state word: the target has not answered yet and its round is waiting."""
    return Text("… probing", style=palette.muted, no_wrap=True)


class Panel(Vertical):
    """A titled panel with a fault line: a failure behind this panel is shown here, not raised."""

    DEFAULT_CSS = """
    Panel > .panel--fault { display: none; }
    Panel.-faulty > .panel--fault { display: block; }
    """

    def __init__(self, title: str, *, id: str) -> None:
        super().__init__(id=id)
        self.border_title = literal(title)
        # made with the first fault: most panels never have one, and an empty fault line in
        # every panel was a widget more to compose, style and re-style before the first frame
        self._fault: Static | None = None
        self._composed = False
        self._reason: str | None = None

    def compose(self) -> ComposeResult:
        """The fault line, if a fault was said already, sits above the panel's content."""
        self._composed = True
        if self._fault is not None:
            yield self._fault

    def show_fault(self, reason: str | None) -> None:
        """Show (or clear, with None) why this panel's data is missing or stale."""
        if reason == self._reason:
            return  # every round clears it: do not repaint for nothing
        self._reason = reason
        self.set_class(reason is not None, "-faulty")
        if self._fault is None:
            self._fault = Static("", classes="panel--fault", markup=False)
            if self._composed:  # else compose yields it
                self.mount(self._fault, before=0)
        self._fault.update(Text("⚠ " + clean(reason or "", 300)))

    @property
    def fault(self) -> str | None:
        """The fault on show, if any."""
        return self._reason


class StatusLine(Widget):
    """One line of text that repaints in place: `Static.update` would also re-run the layout of
    the whole screen, every probe round, for a line whose size never changes."""

    # too long for the width it ends in "…": wrapped into its one row, it broke before a word
    # and left a dangling "·"
    DEFAULT_CSS = "StatusLine { height: 1; text-wrap: nowrap; text-overflow: ellipsis; }"

    def __init__(self, *, id: str) -> None:
        super().__init__(id=id)
        self._text = Text()

    def show(self, text: Text) -> None:
        """Show `text` (repaints only when it differs)."""
        if text.plain == self._text.plain and text.spans == self._text.spans:
            return
        self._text = text
        self.refresh()

    def render(self) -> Text:
        """The line."""
        return self._text
