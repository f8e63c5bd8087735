"""What the console's two full screens share: the catalog's keys of one scope, and read-only
mode applied to them where the key arrives.

`CatalogScreen.SCOPE` names the catalog scope ("fleet", "logs") whose keys the screen binds.
In read-only mode the scope's dangerous keys are hidden and refused (`check_action`; the
backend refuses them again where they are carried out), and pressing one says why instead of
doing nothing (`on_key`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual import events
from textual.screen import Screen

from rocmtui.app import keys

if TYPE_CHECKING:
    from rocmtui.app.app import RocmTui


class CatalogScreen(Screen[None]):
    """A screen whose keys are the catalog's `SCOPE` entries."""

    SCOPE: ClassVar[str]

    @property
    def console(self) -> RocmTui:
        """The app, typed."""
        return self.app  # type: ignore[return-value]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Read-only mode hides the scope's dangerous keys."""
        return not (self.console.read_only and action in keys.DANGEROUS_ACTIONS[self.SCOPE])

    def on_key(self, event: events.Key) -> None:
        """Read-only: a hidden dangerous key says why it did nothing."""
        notice = self.console.read_only and keys.read_only_notice(
            event.key, self.SCOPE, self.console.keymap
        )
        if notice:
            self.notify(notice, severity="warning")
            event.stop()
