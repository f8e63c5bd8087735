"""The bake dialog's node estimates: where the chosen target × arch would finish first.

A line per node: the cache condition it would most likely meet there, the ETA (the cost
history's median for that condition), what runs there now, its load and free disk, or why it
is never chosen (down, stalled, full, lacking the arch, already building it); above them the
node chosen and why in one line. The same `core.placement` answer as `rocmtui bake --node
auto`. The widget asks on a thread of its own (the placement reads the job store) and posts
`Placed` to the dialog, which preselects the node unless the operator chose one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from rich.text import Text
from textual import work
from textual.message import Message
from textual.widgets import Static

from rocmtui.console.backend.refresh import failure_text
from rocmtui.console.backend.userthreads import run_on_own_thread
from rocmtui.console.outside_text import clean
from rocmtui.core.placement.facts import Placement

# (target, arch, the node the dialog came from, the launch's variables) -> placement, blocking
PlaceFor = Callable[[str, str, str | None, Mapping[str, str]], Placement]


def placement_text(placement: Placement | None, asking: bool, error: str | None) -> Text:
    """The choice and every node's estimate (the chosen one marked ▶)."""
    out = Text(no_wrap=True, overflow="ellipsis")
    if error:
        out.append(f"node estimates unavailable: {clean(error, 200)}", style="dim")
        return out
    if placement is None:
        out.append("estimating where it would finish first…" if asking else "", style="dim")
        return out
    out.append("finishes first: " if placement.chosen else "", style="bold")
    out.append(clean(placement.why, 300), style="bold")
    for e in placement.estimates:
        mark = "▶ " if e.node == placement.chosen else "  "
        if e.eligible:
            out.append(f"\n{mark}{clean(e.line(), 120)}")
            out.append(f" · {clean(e.detail(), 200)}", style="dim")
        else:
            out.append(f"\n{mark}{clean(e.line(), 200)}", style="dim")
    return out


class NodeEstimates(Static):
    """Every node's estimate for the choice on show (see the module doc)."""

    class Placed(Message):
        """A placement for (target, arch), the choice it was asked for."""

        def __init__(self, placement: Placement, asked: tuple[str, str]) -> None:
            super().__init__()
            self.placement = placement
            self.asked = asked

    def __init__(self, place_for: PlaceFor | None, *, id: str) -> None:
        super().__init__("", id=id, markup=False)
        self.place_for = place_for
        self.placement: Placement | None = None
        self.asked: tuple[str, str] | None = None
        self._key: tuple[object, ...] | None = None  # what was asked, with the variables
        self.error: str | None = None

    def ask(
        self, target: str, arch: str, original: str | None, overrides: Mapping[str, str]
    ) -> None:
        """Estimate for `target` × `arch` with these variables (again only when one changed:
        the same variables as a node's last build predict frozen there)."""
        key = (target, arch, tuple(sorted(overrides.items())))
        if self.place_for is None or self._key == key:
            return
        self.asked, self._key = (target, arch), key
        self.placement, self.error = None, None
        self.update(placement_text(None, True, None))
        self._estimate(target, arch, original, dict(overrides))

    @work(exclusive=True, group="placement", name="bake-placement", exit_on_error=False)
    async def _estimate(
        self, target: str, arch: str, original: str | None, overrides: dict[str, str]
    ) -> None:
        place_for = self.place_for
        assert place_for is not None
        key = (target, arch, tuple(sorted(overrides.items())))
        try:
            placement = await run_on_own_thread(
                lambda: place_for(target, arch, original, overrides),
                name="bake-placement",
                daemon=True,
            )
        except Exception as exc:  # the store unreadable ...: the dialog works without it
            if self._key == key:
                self.error = failure_text(exc)
                self.update(placement_text(None, False, self.error))
            return
        if self._key == key:
            self.placement = placement
            self.update(placement_text(placement, False, None))
            self.post_message(self.Placed(placement, (target, arch)))


__all__ = ["NodeEstimates", "PlaceFor", "placement_text"]
