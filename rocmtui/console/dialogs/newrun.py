"""The new-run dialog (`R` on the Runs or fleet screen): a target or group, nodes, --set, push.

A fleet run as `rocmtui run` starts it: the chosen name on every ticked node at once (every
node by default), each at its own GFX arch (the dialog shows which: the node's GPU when the
bake file builds it, else the file's default), with the variables typed as `VAR=VALUE ...`.
A node the fleet snapshot says is not up is listed with its state: the core will not start
it and the run's lane says why. The dialog only chooses: it dismisses with a `RunChoice`
and the App's owner of intents asks once more (naming every node and arch) and starts it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from msgspec import Struct
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Label, Select, SelectionList, Static

from rocmtui.console import keys, stylesheets
from rocmtui.console.backend.views import BakeView
from rocmtui.console.dialogs.bake_choices import parse_overrides_field
from rocmtui.console.outside_text import clean, safe
from rocmtui.core.config.fleetfile import FleetConfig
from rocmtui.core.jobs.checks import accepted_arches
from rocmtui.core.snapshots import FleetSnapshot

__all__ = ["NewRunDialog", "RunChoice", "run_arch"]

UP_STATES = ("ok", "building")  # the core's STARTABLE: a run starts a build there


class RunChoice(Struct, frozen=True):
    """What the operator chose: the run to start (asked once more before it starts)."""

    target: str
    nodes: tuple[str, ...]
    overrides: dict[str, str]
    push: bool
    arches: dict[str, str]  # node -> the arch shown for it, for the question


def run_arch(bake: BakeView, gfx: str | None) -> str:
    """The arch a run builds on a node with GPU `gfx`, as the core picks it (`node_arch`): its
    own when the bake file accepts it there, else the file's default."""
    if gfx and gfx in accepted_arches(bake.arches, gfx, bake.declares_arch):
        return gfx
    if not bake.declares_arch:
        return "as written"
    return f"{bake.default_arch or 'default'} (default)"


class NewRunDialog(ModalScreen[RunChoice | None]):
    """Choose a fleet run: target or group, nodes, variables, push."""

    CSS_PATH = stylesheets.LATER  # read already, unless shown before the first frame was

    SCOPE: ClassVar[str] = "newrun"
    BINDINGS: ClassVar[list[BindingType]] = list(keys.bindings("newrun"))

    def __init__(
        self,
        bake: BakeView,
        config: FleetConfig,
        fleet: FleetSnapshot | None,
        keymap: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(id="newrun-dialog", classes="dialog")
        self.bake = bake
        self.config = config
        self.fleet = fleet
        self.keymap = keymap or {}

    def node_line(self, name: str) -> tuple[Text, str]:
        """A node's label (name, the arch it would build, its state when not up)."""
        snap = self.fleet.node(name) if self.fleet is not None else None
        configured = self.config.node(name)
        gfx = (snap.gfx if snap is not None else None) or (configured.gfx if configured else None)
        label = Text(f"{clean(name, 24):<24} {run_arch(self.bake, gfx)}")
        if snap is not None and str(snap.state) not in UP_STATES:
            label.append(f"  {clean(str(snap.state), 20)}: will not start", style="bold")
        return label, run_arch(self.bake, gfx)

    def compose(self) -> ComposeResult:
        """Target, nodes, variables, push, the buttons."""
        bake = self.bake
        start = keys.display_key(keys.BY_ID["newrun.start"].key, self.keymap, "newrun.start")
        with Vertical(id="newrun-box"):
            yield Static(Text("New fleet run", style="bold"), id="newrun-title")
            with Horizontal(id="newrun-fields"):
                yield Label("target")
                default = "default" if "default" in bake.targets else None
                yield Select(
                    [(safe(t, limit=40), t) for t in bake.targets],
                    value=default or (bake.targets[0] if bake.targets else Select.BLANK),
                    allow_blank=not bake.targets,
                    compact=True,
                    id="newrun-target",
                )
            yield Label("nodes · each at its own arch", id="newrun-nodes-label")
            yield SelectionList[str](
                *[(self.node_line(n.name)[0], n.name, True) for n in self.config.nodes],
                id="newrun-nodes",
            )
            with Horizontal(id="newrun-vars"):
                yield Label("set")
                yield Input(
                    placeholder="VAR=VALUE … bake variables for every build (as --set)",
                    compact=True,
                    id="newrun-set",
                )
            yield Checkbox("push the images (asked again)", False, compact=True, id="newrun-push")
            with Horizontal(id="newrun-buttons"):
                yield Button("Start", variant="primary", id="newrun-start", compact=True)
                yield Button("Back", id="newrun-cancel", compact=True)
                yield Static(Text(f"{start} starts"), id="newrun-hint", markup=False)

    def on_mount(self) -> None:
        """The target first."""
        self.query_one("#newrun-target", Select).focus()

    def choice(self) -> RunChoice | str:
        """What is shown, as a run to start; else why not (one line)."""
        target = self.query_one("#newrun-target", Select).value
        if not isinstance(target, str):
            return "choose a target or group"
        nodes = tuple(self.query_one("#newrun-nodes", SelectionList).selected)
        if not nodes:
            return "tick at least one node (space ticks)"
        try:
            overrides = parse_overrides_field(self.query_one("#newrun-set", Input).value)
        except ValueError as exc:
            return str(exc)
        arches = {n: self.node_line(n)[1] for n in nodes}
        push = self.query_one("#newrun-push", Checkbox).value
        return RunChoice(target, tuple(str(n) for n in nodes), overrides, push, arches)

    def action_start(self) -> None:
        """Dismiss with the run chosen, or say why it cannot start."""
        chosen = self.choice()
        if isinstance(chosen, str):
            self.notify(f"Not started: {clean(chosen, 200)}", severity="warning", markup=False)
            return
        self.dismiss(chosen)

    def action_close(self) -> None:
        """Back, nothing started."""
        self.dismiss(None)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """Start or Back."""
        if event.button.id == "newrun-start":
            self.action_start()
        else:
            self.action_close()
