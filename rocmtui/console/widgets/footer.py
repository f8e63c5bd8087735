"""The footer: the screen's keys in one row, rebuilt only when they change, never cut off.

Textual's Footer lists every shown key in binding order and lets the row run off the right
edge: at 80 columns the log screen showed only the log's own keys, and `esc` (back) and `?`
(every key) were past the edge, the last visible key cut mid-word. Here the keys that fit the
width are chosen in the catalog's `FOOTER_FIRST` order (`?` first), shown in their own order;
the rest stay one `?` away. The command palette's key keeps its place at the right.
"""

from __future__ import annotations

from typing import Any

from rich.cells import cell_len
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer

from rocmtui.console import keys, textual_private
from rocmtui.console.outside_text import literal
from rocmtui.console.textual_private import FooterKey

Shown = tuple[Binding, bool, str]  # a binding, whether it is enabled, its tooltip
PALETTE_EXTRA = 2  # the palette key's left border and right padding


class QuietFooter(Footer):
    """Textual's Footer, fitted to the width, and rebuilt only when the keys it shows change.

    Textual rebuilds a screen's footer (dozens of widgets, ~70 ms over a busy log pane) every
    time a screen is pushed over it or popped off it, although the keys are the same: opening
    the help screen over a log pane waited for that, and each rebuild left ~60 styled objects
    in reference cycles for the garbage collector, whose full passes then paused keys over a
    busy log. Here the keys to show are worked out first and the footer is rebuilt only when
    they differ (another focus, a key enabled or disabled, a width that fits other keys).
    """

    _shown: tuple[tuple[Shown, ...], Shown | None] | None = None

    def key_width(self, binding: Binding) -> int:
        """Cells one key takes in the footer: ` key description `."""
        return cell_len(self.app.get_key_display(binding)) + cell_len(binding.description) + 3

    def _candidates(self) -> tuple[list[Shown], Shown | None]:
        """Every shown key, one per action as Textual lists them, and the palette's key."""
        active = self.screen.active_bindings
        by_action: dict[str, Shown] = {}
        for _, binding, enabled, tooltip in active.values():
            if binding.show:
                by_action.setdefault(binding.action, (binding, enabled, tooltip))
        palette: Shown | None = None
        if self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE:
            found = active.get(self.app.COMMAND_PALETTE_BINDING)
            if found is not None:
                _, binding, enabled, tooltip = found
                palette = (binding, enabled, tooltip or binding.description)
        return list(by_action.values()), palette

    def _choose(self) -> tuple[tuple[Shown, ...], Shown | None]:
        """The keys that fit the width (chosen in `FOOTER_FIRST` order), and the palette key."""
        candidates, palette = self._candidates()
        room = self.app.size.width
        if palette is not None:
            room -= self.key_width(palette[0]) + PALETTE_EXTRA
        last = len(keys.FOOTER_RANK)
        order = sorted(
            range(len(candidates)),
            key=lambda n: (keys.FOOTER_RANK.get(candidates[n][0].id or "", last), n),
        )
        chosen: set[int] = set()
        for n in order:
            width = self.key_width(candidates[n][0])
            if width <= room:
                chosen.add(n)
                room -= width
        return tuple(c for n, c in enumerate(candidates) if n in chosen), palette

    def compose(self) -> ComposeResult:
        """The chosen keys, as Textual's footer draws them; remembers which."""
        self._forget_removed_keys()
        if not textual_private.footer_ready(self):
            return
        self._shown = shown, palette = self._choose()
        self.styles.grid_size_columns = len(shown)
        for key in shown:
            yield self._footer_key(key).data_bind(compact=Footer.compact)
        if palette is not None:
            yield self._footer_key(palette, classes="-command-palette")

    def _footer_key(self, shown: Shown, classes: str = "") -> FooterKey:
        """One key as Textual's footer draws it."""
        binding, enabled, tooltip = shown
        key = FooterKey(
            binding.key,
            self.app.get_key_display(binding),
            binding.description,
            binding.action,
            classes=classes,
            disabled=not enabled,
        )
        if tooltip:  # FooterKey's own `tooltip=` takes a str, which the tooltip parses as markup
            key.tooltip = literal(tooltip)
        return key

    def _forget_removed_keys(self) -> None:
        """Drop the data-binding watchers of keys a recompose removed.

        Textual's Footer binds each FooterKey to its `compact` reactive; the watcher list keeps
        (key, setter) pairs and prunes closed keys only when `compact` changes, which it never
        does here. Every recompose (a dialog opened and closed) left its keys, their styles and
        rendered lines alive: 7 widgets per `?` press, and the garbage collector's full passes
        grew with them (a 345 ms pause after a few dozen presses over a busy log).
        """
        textual_private.forget_dead_watchers(self)

    def _unchanged(self) -> bool:
        return self._shown is not None and self._choose() == self._shown

    def bindings_changed(self, screen: Screen[Any]) -> None:
        """Rebuild (as Textual does) only when the keys to show differ from the ones shown."""
        here = self.is_attached and screen is self.screen
        if textual_private.footer_ready(self) and here and self._unchanged():
            return
        super().bindings_changed(screen)

    def on_resize(self, event: events.Resize) -> None:
        """Another width may fit other keys."""
        if textual_private.footer_ready(self) and self.is_attached and not self._unchanged():
            self.call_after_refresh(self.recompose)
