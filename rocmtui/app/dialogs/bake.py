"""The bake dialog: target, arch, node, push; the exact command; what `bake --print` resolves.

Opened by `b` (fresh) or `r` (ready: the selected job's target, arch and node filled in and the
Start button focused, so Enter starts it: a single-arch rebuild is `r`, Enter). A pushing target
needs a second, explicit key in a confirmation. The plan is resolved in a worker whenever a
field changes; the dialog dismisses with the `BakePlan` to start, and the fleet screen starts it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Select, Static

from rocmtui.app.dialogs.confirm import ConfirmDialog
from rocmtui.app.feeds import describe
from rocmtui.app.messages import PlanResolved
from rocmtui.app.model import BakePlan, ConsoleData
from rocmtui.app.text import clean

STANDARD_ARCHES = ("gfx950", "gfx1201", "gfx1250")
MAX_RESOLVED_LINES = 400


@dataclass(frozen=True, slots=True)
class BakeRequest:
    """What the dialog opens with."""

    node: str | None = None
    target: str | None = None
    arch: str | None = None
    ready: bool = False  # focus Start: Enter launches at once


def arch_choices(data: ConsoleData, node: str | None) -> list[str]:
    """gfx950, gfx1201, gfx1250, the node's own arch and whatever the bake file knows."""
    out = list(STANDARD_ARCHES)
    extra: list[str] = []
    if data.fleet is not None and node is not None:
        snap = data.fleet.node(node)
        if snap is not None and snap.gfx:
            extra.append(snap.gfx)
    if data.bake is not None:
        extra.extend(data.bake.arches)
    for arch in extra:
        if arch not in out:
            out.append(arch)
    return out


class BakeDialog(ModalScreen[BakePlan | None]):
    """Choose and start one bake."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Back", id="bake.back"),
        Binding("ctrl+s", "start", "Start", id="bake.start"),
        Binding("p", "toggle_push", "Push on/off", id="bake.push"),
    ]

    def __init__(self, data: ConsoleData, request: BakeRequest) -> None:
        super().__init__(id="bake-dialog", classes="dialog")
        self.data = data
        self.request = request
        self.plan: BakePlan | None = None
        assert data.bake is not None
        self.bake = data.bake

    def compose(self) -> ComposeResult:
        """Fields in one row, the command, the resolved definition, the buttons."""
        bake = self.bake
        nodes = [n.name for n in self.data.fleet.nodes] if self.data.fleet else []
        node = self.request.node if self.request.node in nodes else (nodes[0] if nodes else None)
        target = (
            self.request.target
            if self.request.target in bake.targets
            else (bake.targets[0] if bake.targets else None)
        )
        arches = arch_choices(self.data, node)
        arch = self.request.arch if self.request.arch in arches else self.node_arch(node, arches)
        with Vertical(id="bake-box"):
            yield Static(Text("Bake", style="bold"), id="bake-title")
            with Horizontal(id="bake-fields"):
                yield Label("target")
                yield Select(
                    [(clean(t, 40), t) for t in bake.targets],
                    value=target or Select.BLANK,
                    allow_blank=False,
                    compact=True,
                    id="bake-target",
                )
                yield Label("arch")
                yield Select(
                    [(a, a) for a in arches],
                    value=arch,
                    allow_blank=False,
                    compact=True,
                    id="bake-arch",
                )
                yield Label("node")
                yield Select(
                    [(clean(n, 30), n) for n in nodes],
                    value=node or Select.BLANK,
                    allow_blank=False,
                    compact=True,
                    id="bake-node",
                )
                yield Label("push")
                yield Select(
                    [("no", False), ("yes", True)],
                    value=target in bake.pushing_targets,
                    allow_blank=False,
                    compact=True,
                    id="bake-push",
                )
            yield Static("", id="bake-command", markup=False)
            with VerticalScroll(id="bake-resolved"):
                yield Static("resolving…", id="bake-print", markup=False)
            with Horizontal(id="bake-buttons"):
                yield Button("Start", variant="primary", id="bake-start", compact=True)
                yield Button("Back", id="bake-cancel", compact=True)
                yield Static("", id="bake-hint", markup=False)

    def node_arch(self, node: str | None, arches: list[str]) -> str:
        """The node's own arch when it has one, else the bake file's default (gfx950)."""
        if self.data.fleet is not None and node is not None:
            snap = self.data.fleet.node(node)
            if snap is not None and snap.gfx in arches:
                return snap.gfx
        return arches[0]

    def on_mount(self) -> None:
        """Focus Start when opened by `r` (Enter launches), the target otherwise."""
        for widget in self.query("#bake-start" if self.request.ready else "#bake-target"):
            widget.focus()  # (absent only when the app is already closing)
        if self.query("#bake-target"):
            self.refresh_plan()

    # ---------------------------------------------------------------- the plan

    def choice(self) -> tuple[str, str, str, bool] | None:
        """(target, arch, node, push) as chosen, or None while a field is blank."""
        values = [self.query_one(f"#bake-{n}", Select).value for n in ("target", "arch", "node")]
        if any(v is Select.BLANK or v is None for v in values):
            return None
        target, arch, node = (str(v) for v in values)
        return target, arch, node, bool(self.query_one("#bake-push", Select).value)

    @on(Select.Changed, "#bake-target")
    def _target_changed(self, event: Select.Changed) -> None:
        """A pushing target turns push on (it pushes whatever the switch says)."""
        if event.value in self.bake.pushing_targets:
            self.query_one("#bake-push", Select).value = True

    @on(Select.Changed)
    def refresh_plan(self) -> None:
        """Re-resolve whenever a field changes."""
        chosen = self.choice()
        if chosen is None:
            return
        target, arch, node, push = chosen
        self.plan = BakePlan(target=target, arch=arch, node=node, push=push)
        self.show_plan(self.plan, resolving=True)
        if getattr(self.app, "resolve_plans", True):  # snapshot tests post a recorded plan
            self.resolve(target, arch, node, push)

    @work(thread=True, exclusive=True, group="plan", name="bake-print", exit_on_error=False)
    def resolve(self, target: str, arch: str, node: str, push: bool) -> None:
        """`bake --print` with the launch environment (blocks: a worker)."""
        backend = self.app.backend  # type: ignore[attr-defined]
        try:
            plan = backend.plan(target, arch, node, push)
        except Exception as exc:
            plan = BakePlan(target, arch, node, push, error=describe(exc))
        self.post_message(PlanResolved(plan))

    @on(PlanResolved)
    def _resolved(self, message: PlanResolved) -> None:
        plan = message.plan
        if self.plan is None or (plan.target, plan.arch, plan.node, plan.push) != (
            self.plan.target,
            self.plan.arch,
            self.plan.node,
            self.plan.push,
        ):
            return  # an answer for a choice the operator already changed
        self.plan = plan
        self.show_plan(plan, resolving=False)

    def show_plan(self, plan: BakePlan, resolving: bool) -> None:
        """The command line and the resolved definition, changed lines highlighted."""
        command = Text("$ ", style="bold")
        if plan.command:
            command.append(" ".join(clean(part, 200) for part in plan.command))
        else:
            command.append(
                f"GFX_ARCH={plan.arch} docker buildx bake … -- {clean(plan.target)}", style="dim"
            )
        self.query_one("#bake-command", Static).update(command)
        body = Text()
        if plan.error:
            body.append(f"bake --print failed: {clean(plan.error, 300)}", style="bold red")
        elif resolving:
            body.append("resolving with bake --print…", style="dim")
        else:
            body.append(
                "bake --print (lines that differ from the defaults are marked ▶)\n", style="dim"
            )
            for index, line in enumerate(plan.resolved[:MAX_RESOLVED_LINES]):
                if index in plan.changed:
                    body.append("▶ " + clean(line, 300) + "\n", style="bold reverse")
                else:
                    body.append("  " + clean(line, 300) + "\n")
        self.query_one("#bake-print", Static).update(body)
        if plan.changed and not resolving:  # bring the first difference into view
            first = min(plan.changed) + 1  # +1: the heading line
            scroller = self.query_one("#bake-resolved")
            self.call_after_refresh(scroller.scroll_to, y=max(0, first - 3), animate=False)
        hint = Text("ctrl+s start · p push on/off · esc back", style="dim")
        if plan.push:
            hint.append("  pushes to the registry: asks again", style="bold")
        self.query_one("#bake-hint", Static).update(hint)

    # ---------------------------------------------------------------- actions

    @on(Button.Pressed, "#bake-start")
    def action_start(self) -> None:
        """Start; a pushing target asks a second time, with an explicit key."""
        chosen = self.choice()
        if chosen is None:
            self.notify("Choose a target, an arch and a node.", severity="warning")
            return
        target, arch, node, push = chosen
        plan = (
            self.plan
            if self.plan and self.plan.target == target
            else BakePlan(target, arch, node, push)
        )
        if not push:
            self.dismiss(plan)
            return
        registry = self.app.config.registry.url  # type: ignore[attr-defined]

        def answered(yes: bool | None) -> None:
            if yes:
                self.dismiss(plan)

        self.app.push_screen(
            ConfirmDialog(
                f"Push {clean(target)} for {arch} to {clean(registry)}?",
                "y",
                "Build and push",
                details="Pushing replaces the published tags of this target.",
            ),
            answered,
        )

    @on(Button.Pressed, "#bake-cancel")
    def action_close(self) -> None:
        """Back to the fleet screen, nothing started."""
        self.dismiss(None)

    def action_toggle_push(self) -> None:
        """`p`: push on/off."""
        box = self.query_one("#bake-push", Select)
        box.value = not bool(box.value)
