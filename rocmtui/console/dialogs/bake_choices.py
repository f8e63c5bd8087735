"""The bake dialog's choices as pure functions: which arches a node can build, what the dialog
says about the arch and the push, the variables field (`VAR=VALUE ...`, as `--set` takes
them) and what bake printed. No Textual here: each is tested on its own.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping, Sequence

from rich.text import Text

from rocmtui.console.backend.names import bake_file_names as bake_named
from rocmtui.console.backend.views import BakePlan, BakeView
from rocmtui.console.outside_text import clean
from rocmtui.core.config.fleetfile import FleetConfig
from rocmtui.core.jobs.checks import FLEET_ARCHES, accepted_arches, pick_node
from rocmtui.core.jobs.command import parse_overrides
from rocmtui.core.jobs.refusals import LaunchError

MAX_RESOLVED_LINES = 400
#: How the job store writes a secret it would not keep (rocmtui.core.text.redact's placeholder).
REDACTED = "<redacted:"


def default_arch(bake: BakeView, choices: Sequence[str] = ()) -> str:
    """The arch a launch builds unless told: the bake file's GFX_ARCH default, as for
    `rocmtui bake` (never the node's GPU: a console and a script must build the same thing);
    for a bake file with no GFX_ARCH, the one of `choices` there is (the node's own, or none)."""
    wanted = bake.default_arch or next(iter(bake.arches), FLEET_ARCHES[0])
    return wanted if not choices or wanted in choices else choices[0]


def arch_choices(
    bake: BakeView, node_gfx: str | None, keep: Iterable[str | None] = ()
) -> list[str]:
    """What the core accepts on that node (`checks.accepted_arches`: the bake file's arches,
    the fleet's three, the node's own GPU); `keep` (a job's recorded arch) stays offered
    whatever the file says now. A bake file with no GFX_ARCH builds as written: the node's
    own arch, or "" (none) when its GPU is not known."""
    out = list(accepted_arches(bake.arches, node_gfx, bake.declares_arch))
    for arch in keep if bake.declares_arch else ():
        if arch and arch not in out:
            out.append(arch)
    return out or [""]


def no_node(config: FleetConfig) -> str | None:
    """The core's word when the fleet file has no node to build on, else None."""
    try:
        pick_node(config, None)
    except LaunchError as exc:
        return str(exc)
    return None


def arch_label(arch: str) -> str:
    """How an arch reads in the chooser ("" is a build for no particular arch)."""
    return arch or "none (as written)"


def arch_note(
    arch: str, bake: BakeView, node: str, node_gfx: str | None, plan: BakePlan | None
) -> str:
    """One line on where the arch comes from and what changing the node does to it."""
    if not bake.declares_arch:
        own = f"; recorded as {clean(node, 30)}'s own {arch}" if arch else ""
        return (
            f"arch: {clean(bake_named(bake.path), 60)} declares no GFX_ARCH: built as written{own}"
        )
    default = default_arch(bake)
    if plan is not None and plan.arch_pinned and plan.arch == arch:
        return f"arch {arch}: fixed by {clean(plan.target, 40)} whatever is chosen"
    where = "GFX_ARCH's default" if arch == default else f"GFX_ARCH's default is {default}"
    gpu = f"; {clean(node, 30)} is {node_gfx}" if node_gfx and node_gfx != arch else ""
    return f"arch {arch}: {where}{gpu}; a new node keeps it"


def node_changed_note(arch: str, node: str, node_gfx: str | None, fallback: str) -> str:
    """Said when a new node cannot build the chosen arch and the default is taken instead."""
    gpu = f" (its GPU is {node_gfx})" if node_gfx else ""
    return (
        f"{clean(node, 30)}{gpu} cannot build {arch}: the arch is back to {fallback}, "
        "the bake file's default"
    )


def push_note(plan: BakePlan | None, switch: bool, resolving: bool) -> str:
    """Whether the launch pushes, and where, as the resolved plan says (never guessed)."""
    if resolving or plan is None:
        return "push: decided when bake has resolved the plan" if not switch else "push: --push"
    if not plan.push:
        return "push: no"
    hosts = ", ".join(clean(h, 60) for h in plan.push_hosts) or "the registry"
    why = "--push" if plan.push_switch else "its output is a registry"
    said = f"push: to {hosts} ({why}); Start asks first"
    if plan.missing_logins:
        said += f"; no docker login for {', '.join(clean(h, 60) for h in plan.missing_logins)}"
    return said


def format_overrides(overrides: Iterable[tuple[str, str]]) -> str:
    """The variables field's text for these overrides (quoted where a value needs it)."""
    return " ".join(shlex.quote(f"{name}={value}") for name, value in overrides)


def parse_overrides_field(text: str) -> dict[str, str]:
    """`VAR=VALUE ...` (shell quoting for spaces) as a mapping; ValueError says what is wrong.
    The names' own refusals (undeclared variables, GFX_ARCH) are the core's, in the plan."""
    try:
        words = shlex.split(text)
    except ValueError as exc:  # an open quote
        raise ValueError(f"set: {exc}") from None
    try:
        found = parse_overrides(words)
    except LaunchError as exc:
        raise ValueError(str(exc)) from None
    for name, value in found.items():
        if REDACTED in value:
            raise ValueError(f"set: {name} was recorded redacted (a secret): type its value again")
    return found


def overrides_key(overrides: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """A mapping as the sorted pairs a plan and a job record carry."""
    return tuple(sorted(overrides.items()))


def resolved_text(plan: BakePlan | None, resolving: bool, set_error: str | None) -> Text:
    """What bake printed, or why there is nothing to show (the variables field's error first)."""
    body = Text()
    if set_error:
        body.append(clean(set_error, 300), style="bold red")
    elif plan is None:
        body.append("choose a target, an arch and a node", style="dim")
    elif resolving:
        body.append("resolving with bake --print…", style="dim")
    elif plan.error:
        body.append(f"bake --print failed: {clean(plan.error, 300)}", style="bold red")
    else:
        body.append(
            "bake --print (lines that differ from the defaults are marked ▶)\n", style="dim"
        )
        for index, line in enumerate(plan.resolved[:MAX_RESOLVED_LINES]):
            if index in plan.changed:
                body.append("▶ " + clean(line, 300) + "\n", style="bold reverse")
            else:
                body.append("  " + clean(line, 300) + "\n")
    return body
