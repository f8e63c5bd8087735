"""What the console's full screens share: the catalog's keys of one scope, and read-only mode
applied to them where the key arrives.

`CatalogScreen.SCOPE` names the catalog scope ("fleet", "logs", "matrix") whose keys the screen
binds. In read-only mode the scope's dangerous keys are hidden and refused (`check_action`; the
core refuses them again where they are carried out), and pressing one says why instead of
doing nothing (`on_key`). The screen is told read-only and the keymap when it is made: it never
asks the App.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from textual import events
from textual.screen import Screen

from rocmtui.console import keys
from rocmtui.console.widgets.common import Palette


class CatalogScreen(Screen[None]):
    """A screen whose keys are the catalog's `SCOPE` entries."""

    SCOPE: ClassVar[str]

    def __init__(self, *, read_only: bool, keymap: Mapping[str, str], id: str) -> None:
        super().__init__(id=id)
        self.read_only = read_only
        self.keymap = keymap
        self._palette: Palette | None = None

    @property
    def palette(self) -> Palette:
        """The theme's colours, resolved once (a screen that follows theme changes sets
        `_palette` to None to resolve them again)."""
        if self._palette is None:
            self._palette = Palette.from_app(self.app)
        return self._palette

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Read-only mode hides the scope's dangerous keys."""
        return not (self.read_only and action in keys.DANGEROUS_ACTIONS[self.SCOPE])

    def on_key(self, event: events.Key) -> None:
        """Read-only: a hidden dangerous key says why it did nothing."""
        notice = self.read_only and keys.read_only_notice(event.key, self.SCOPE, self.keymap)
        if notice:
            self.notify(notice, severity="warning", markup=False)
            event.stop()
