"""The bake dialog: target, arch, node, push and variables; the exact command; what bake resolves.

Opened by `b` (fresh) or `r` (ready: exactly what the selected job built, its name, arch,
node, push and variables, with Start focused, so Enter starts it). Every change is resolved by
the core on a thread of its own (never behind the views' thread pool, see `userthreads`):
the arch a matrix name fixes, whether the launch pushes and to which registries its tags name,
and `bake --print` under the job's environment. Start launches only the plan resolved for
exactly what is on screen: pressed earlier, it starts when the answer comes, or says why not.
A launch that pushes, or that bake will ask for privileges (`--allow`: reads outside the bake
folder, `network.host` ...), always asks first, with its own key, naming those registries and
privileges; only what was asked is granted. The dialog dismisses with the `BakePlan` to start;
the flow that opened it (`ConsoleActions`) launches it. It is given what it shows and the one
call that resolves a choice (`PlanFor`): it never reaches into the App.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import ClassVar

from msgspec.structs import replace
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import Button, Input, Label, Select, Static

from rocmtui.console import keys, stylesheets
from rocmtui.console.backend.refresh import failure_text
from rocmtui.console.backend.userthreads import run_on_own_thread
from rocmtui.console.backend.views import BakePlan, BakeRequest, ConsoleData
from rocmtui.console.dialogs.bake_choices import (
    arch_choices,
    arch_label,
    arch_note,
    default_arch,
    format_overrides,
    no_node,
    node_changed_note,
    overrides_key,
    parse_overrides_field,
    push_note,
    resolved_text,
)
from rocmtui.console.dialogs.bake_grants import privileges_note, start_question
from rocmtui.console.dialogs.bake_nodes import NodeEstimates, PlaceFor
from rocmtui.console.dialogs.confirm import ConfirmDialog
from rocmtui.console.outside_text import clean, safe
from rocmtui.core.config.fleetfile import FleetConfig
from rocmtui.core.jobs.command import shown_command

__all__ = ["BakeDialog", "PlanFor"]  # BakeRequest is a view (rocmtui.console.backend.views)

TYPING_PAUSE = 0.4  # s after the last key in the variables field before it is resolved

Choice = tuple[str, str, str, bool, tuple[tuple[str, str], ...]]  # target, arch, node, push, set
# what resolves a choice: (target, arch, node, push, variables) -> the core's plan, blocking
PlanFor = Callable[[str, str, str, bool, Mapping[str, str]], BakePlan]


class PlanResolved(Message):
    """From the dialog's resolving worker: the plan for `request`, the choice it was asked."""

    def __init__(self, plan: BakePlan, request: Choice) -> None:
        super().__init__()
        self.plan = plan
        self.request = request


class BakeDialog(ModalScreen[BakePlan | None]):
    """Choose and start one bake."""

    CSS_PATH = stylesheets.LATER  # read already, unless shown before the first frame was

    SCOPE: ClassVar[str] = "bake"
    BINDINGS: ClassVar[list[BindingType]] = list(keys.bindings("bake"))

    def __init__(
        self,
        data: ConsoleData,
        request: BakeRequest,
        config: FleetConfig,
        plan_for: PlanFor,
        keymap: Mapping[str, str] | None = None,
        place_for: PlaceFor | None = None,
    ) -> None:
        """Choose a bake from `data` (the bake file, the fleet), opened as `request` says, on
        the nodes of `config`; `plan_for` resolves each choice and `place_for` estimates every
        node for it (both block: run on a thread)."""
        super().__init__(id="bake-dialog", classes="dialog")
        self.data = data
        self.request = request
        self.config = config
        self.plan_for = plan_for
        self.keymap = keymap or {}
        assert data.bake is not None
        self.bake = data.bake
        self.push_switch = request.push
        self.plan: BakePlan | None = None  # on show: resolved when `resolved_for` is `asked`
        self.asked: Choice | None = None  # the choice last sent to bake
        self.resolved_for: Choice | None = None  # the choice `plan` was resolved for
        self.start_when_resolved = False  # Start was pressed while bake was still answering
        self.set_error: str | None = None
        self._note = ""  # what the last node change did to the arch
        self._typing: Timer | None = None
        self.place_for = place_for
        self.node_touched = False  # the operator chose a node: estimates never move it
        self._set_nodes: set[str] = set()  # node values set by the dialog, not the operator

    def compose(self) -> ComposeResult:
        """Fields, variables, notes, the command, the resolved definition, the buttons."""
        bake = self.bake
        nodes = [n.name for n in self.data.fleet.nodes] if self.data.fleet else []
        nodes += [n.name for n in self.config.nodes if n.name not in nodes]
        node = self.request.node if self.request.node in nodes else (nodes[0] if nodes else None)
        self._set_nodes.add(str(node))
        target = self.request.target if self.request.target in bake.targets else None
        target = target or (bake.targets[0] if bake.targets else None)
        arches = arch_choices(bake, self.node_gfx(node), (self.request.arch,))
        arch = self.request.arch if self.request.arch in arches else default_arch(bake, arches)
        with Vertical(id="bake-box"):
            yield Static(Text("Bake", style="bold"), id="bake-title")
            with Horizontal(id="bake-fields"):
                yield Label("target")
                yield Select(
                    [(safe(t, limit=40), t) for t in bake.targets],
                    value=target or Select.BLANK,
                    allow_blank=False,
                    compact=True,
                    id="bake-target",
                )
                yield Label("arch")
                yield Select(
                    [(safe(arch_label(a), limit=30), a) for a in arches],
                    value=arch,
                    allow_blank=False,
                    compact=True,
                    id="bake-arch",
                )
                yield Label("node")
                yield Select(
                    [(safe(n, limit=30), n) for n in nodes],
                    value=node or Select.NULL,
                    allow_blank=not nodes,  # a fleet file with no node: nothing to choose
                    compact=True,
                    id="bake-node",
                )
            with Horizontal(id="bake-vars"):
                yield Label("set")
                yield Input(
                    format_overrides(self.request.overrides),
                    placeholder="VAR=VALUE … bake variables for this build (as --set)",
                    compact=True,
                    id="bake-set",
                )
            yield Static("", id="bake-note", markup=False)
            yield NodeEstimates(self.place_for, id="bake-nodes")
            yield Static("", id="bake-command", markup=False)
            with VerticalScroll(id="bake-resolved"):
                yield Static("resolving…", id="bake-print", markup=False)
            with Horizontal(id="bake-buttons"):
                yield Button("Start", variant="primary", id="bake-start", compact=True)
                yield Button("Back", id="bake-cancel", compact=True)
                yield Static("", id="bake-hint", markup=False)

    def node_gfx(self, node: str | None) -> str | None:
        """The node's GPU arch, as probed, else as the fleet file says."""
        snap = self.data.fleet.node(node) if self.data.fleet and node else None
        if snap is not None and snap.gfx:
            return snap.gfx
        configured = self.config.node(node) if node else None
        return configured.gfx if configured else None

    def on_mount(self) -> None:
        """Focus Start when opened by `r` (Enter launches), the target otherwise."""
        for widget in self.query("#bake-start" if self.request.ready else "#bake-target"):
            widget.focus()  # (absent only when the app is already closing)
        if self.query("#bake-target"):
            self.refresh_plan()

    # ---------------------------------------------------------------- the plan

    def choice(self) -> Choice | None:
        """(target, arch, node, push switch, variables) as shown, or None while a field is
        blank or the variables do not parse (`set_error` says why)."""
        values = [self.query_one(f"#bake-{n}", Select).value for n in ("target", "arch", "node")]
        if not self.config.nodes and not self.data.fleet:
            self.set_error = no_node(self.config)
            return None
        if any(v is Select.BLANK or v is None for v in values):
            return None
        try:
            overrides = parse_overrides_field(self.query_one("#bake-set", Input).value)
        except ValueError as exc:
            self.set_error = str(exc)
            return None
        self.set_error = None
        target, arch, node = (str(v) for v in values)
        return target, arch, node, self.push_switch, overrides_key(overrides)

    @on(Select.Changed, "#bake-node")
    def _node_changed(self, event: Select.Changed) -> None:
        """The new node may not build the chosen arch: say what happens to it."""
        node = str(event.value)
        self.node_touched = self.node_touched or node not in self._set_nodes
        box = self.query_one("#bake-arch", Select)
        arch = str(box.value)
        arches = arch_choices(self.bake, self.node_gfx(node), (self.request.arch,))
        self._note = ""
        if arch not in arches:
            fallback = default_arch(self.bake, arches)
            self._note = node_changed_note(arch, node, self.node_gfx(node), fallback)
            arch = fallback
        box.set_options([(safe(arch_label(a), limit=30), a) for a in arches])
        box.value = arch

    @on(Select.Changed)
    def _field_changed(self) -> None:
        self.refresh_plan()

    @on(Input.Changed, "#bake-set")
    def _typed(self) -> None:
        """Resolve once the operator pauses (one bake run per pause, not per key)."""
        if self._typing is not None:
            self._typing.stop()
        self._typing = self.set_timer(TYPING_PAUSE, self.refresh_plan, name="bake-set-pause")

    @on(Input.Submitted, "#bake-set")
    def _set_now(self) -> None:
        self.refresh_plan()

    def refresh_plan(self) -> None:
        """Ask bake again when what is shown changed (a field, the push switch, the variables);
        an answer for anything older is dropped, and so is a pending Start."""
        chosen = self.choice()
        if chosen == self.asked and chosen is not None:
            return
        self.asked = chosen
        self.start_when_resolved = False
        if chosen is None:
            self.plan = None
            self.show()
            return
        target, arch, node, push, overrides = chosen
        # the node the operator came from (`b` on a node row, `r`: the job's node) is kept
        # while it is as good as the best, and the note says why when it is not
        original = self.request.node
        self.query_one(NodeEstimates).ask(target, arch, original, dict(overrides))
        self.plan = BakePlan(target, arch, node, push, push_switch=push, overrides=overrides)
        self.show()
        self.resolve(chosen)

    @work(exclusive=True, group="plan", name="bake-print", exit_on_error=False)
    async def resolve(self, chosen: Choice) -> None:
        """The core's answer for `chosen`, from a thread of its own."""
        target, arch, node, push, overrides = chosen
        plan_for = self.plan_for
        try:
            plan = await run_on_own_thread(
                lambda: plan_for(target, arch, node, push, dict(overrides)),
                name="bake-print",
                daemon=True,  # a read for the screen: nothing to finish at exit
            )
        except Exception as exc:
            plan = BakePlan(
                target, arch, node, push, error=failure_text(exc), push_switch=push,
                overrides=overrides,
            )  # fmt: skip
        self.post_message(PlanResolved(plan, chosen))

    @on(PlanResolved)
    def _resolved(self, message: PlanResolved) -> None:
        plan = message.plan
        if self.asked is None or message.request != self.asked:
            return  # an answer for a choice the operator already changed
        asked = self.asked
        self.plan = plan
        self.resolved_for = asked
        self.show()
        if self.start_when_resolved:
            self.start_when_resolved = False
            self.action_start()

    @on(NodeEstimates.Placed)
    def _placed(self, message: NodeEstimates.Placed) -> None:
        """Preselect the node that would finish first, unless the operator chose one or a
        start waits on the plan on show."""
        chosen, box = message.placement.chosen, self.query_one("#bake-node", Select)
        asked = self.asked[:2] if self.asked else None
        if chosen is None or self.node_touched or self.start_when_resolved:
            return
        if asked != message.asked or chosen == box.value:
            return
        self._set_nodes.add(chosen)
        box.value = chosen

    @property
    def resolved(self) -> bool:
        """The plan on show is bake's answer for exactly what is shown."""
        return self.plan is not None and self.asked is not None and self.resolved_for == self.asked

    def show(self) -> None:
        """Notes, the command line, the resolved definition (changed lines marked), the hint."""
        plan, resolving = self.plan, not self.resolved
        chosen = self.asked
        note = Text(no_wrap=True, overflow="ellipsis")
        if chosen is not None:
            _, arch, node, _, _ = chosen
            shown_arch = plan.arch if plan is not None and not resolving else arch
            note.append(self._note + "\n" if self._note else "", style="bold")
            note.append(arch_note(shown_arch, self.bake, node, self.node_gfx(node), plan))
            note.append("\n" + push_note(plan, self.push_switch, resolving))
            asks = privileges_note(plan, resolving, self.request.allowed)
            note.append("\n" if asks else "").append(asks)
            if plan is not None and plan.estimate and not resolving:
                note.append("\n" + clean(plan.estimate, 200), style="italic")
        self.query_one("#bake-note", Static).update(note)
        command = Text("$ ", style="bold")
        if plan is not None and plan.command:
            command.append(" ".join(clean(part, 200) for part in shown_command(plan.command)))
        elif plan is not None:
            command.append(
                f"GFX_ARCH={plan.arch} docker buildx bake … -- {clean(plan.target)}", style="dim"
            )
        self.query_one("#bake-command", Static).update(command)
        shown = resolved_text(plan, resolving, self.set_error)
        self.query_one("#bake-print", Static).update(shown)
        if plan is not None and plan.changed and not resolving:  # the first difference in view
            first = min(plan.changed) + 1  # +1: the heading line
            scroller = self.query_one("#bake-resolved")
            self.call_after_refresh(scroller.scroll_to, y=max(0, first - 3), animate=False)
        hint = Text(self.keys_hint(), style="dim")
        if self.start_when_resolved:
            hint.append("  starting once bake has resolved it…", style="bold")
        elif plan is not None and plan.privileges and not resolving:
            hint.append("  asks bake for privileges: asks again", style="bold")
        elif plan is not None and plan.push and not resolving:
            hint.append("  pushes to the registry: asks again", style="bold")
        self.query_one("#bake-hint", Static).update(hint)

    def keys_hint(self) -> str:
        """`ctrl+s start · p push on/off · esc back`, with the keys as the keymap has them."""
        said = []
        for key_id, what in (("bake.start", "start"), ("bake.push", "push on/off"),
                             ("bake.back", "back")):  # fmt: skip
            entry = keys.BY_ID[key_id]
            said.append(f"{keys.display_key(entry.key, self.keymap, key_id)} {what}")
        return " · ".join(said)

    # ---------------------------------------------------------------- actions

    @on(Button.Pressed, "#bake-start")
    def action_start(self) -> None:
        """Start the plan bake resolved for what is shown; before the answer, start when it
        comes. A plan that pushes or asks for privileges asks a second time, with an explicit
        key; only then are its privileges granted."""
        self.refresh_plan()  # the variables typed a moment ago count
        plan = self.plan
        if plan is None or self.asked is None:
            why = self.set_error or "choose a target, an arch and a node"
            self.notify(f"Not started: {why}", severity="warning", markup=False)
            return
        if not self.resolved:
            self.start_when_resolved = True
            self.show()
            return
        if plan.error or not plan.ready:
            why = clean(plan.error or "bake has not resolved it", 200)
            self.notify(f"Not started: {why}", severity="error", markup=False)
            return
        if not plan.push and not plan.privileges:
            self.dismiss(plan)
            return
        granted = replace(plan, granted=tuple(p.grant for p in plan.privileges))

        def answered(yes: bool | None) -> None:
            if yes and self.plan is plan:
                self.dismiss(granted)

        question, label, details = start_question(plan)
        self.app.push_screen(
            ConfirmDialog(question, label, keymap=self.keymap, details=details), answered
        )

    @on(Button.Pressed, "#bake-cancel")
    def action_close(self) -> None:
        """Back to the fleet screen, nothing started."""
        self.dismiss(None)

    def action_toggle_push(self) -> None:
        """`p`: the `--push` switch; a target whose output is a registry pushes regardless."""
        plan = self.plan
        if self.resolved and plan is not None and plan.push and not plan.push_switch:
            self.notify(
                f"{clean(plan.target)} always pushes: its output is a registry.",
                severity="information",
                markup=False,
            )
            return
        self.push_switch = not self.push_switch
        self.refresh_plan()
