"""The names a launch may use, checked before anything starts: target, arch, node, variables.

A target is any name bake accepts: a `target` block is known from the file alone (the
single-arch rebuild: `pytorch` + `GFX_ARCH`); a group or matrix name (`all`, `pytorch-gfx1201`)
is asked of `bake --print` under the job's environment, since matrix names follow variables. A
name bake does not know is refused in one line naming the file, with up to three close names.

The arches a launch accepts (`launch_arches`) are the ones the console's bake dialog offers:
the bake file's (GFX_ARCH's default, then SUPPORTED_GFX_ARCHES), the three the fleet builds for,
and the node's own GPU.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rocmtui.core.bake.file import ARCH_VARIABLE, BakeError, BakeFile
from rocmtui.core.config.fleetfile import FleetConfig, NodeConfig
from rocmtui.core.jobs.printed import printed_pushes, printed_targets
from rocmtui.core.jobs.refusals import LaunchError

__all__ = [
    "FLEET_ARCHES",
    "RESOLVE_TIMEOUT",
    "accepted_arches",
    "check_arch",
    "check_overrides",
    "default_arch",
    "launch_arches",
    "pick_node",
    "printed_view",
    "resolve_target",
    "static_names",
    "target_pushes",
    "unknown_target",
]

#: How long a launch waits for `bake --print` (it answers in ~0.1 s and needs no daemon).
RESOLVE_TIMEOUT = 20.0
#: The architectures the fleet builds for (gfx950 by default, gfx1201, gfx1250): a launch for
#: any of them is accepted, and offered, even by a bake file that lists fewer.
FLEET_ARCHES = ("gfx950", "gfx1201", "gfx1250")


# -- arches -----------------------------------------------------------------------------------


def accepted_arches(
    listed: Sequence[str], node_gfx: str | None, declares_arch: bool = True
) -> tuple[str, ...]:
    """The arches a launch on a node whose GPU is `node_gfx` accepts, in the order a chooser
    offers them: the bake file's `listed` arches, the fleet's three, the node's own (the
    strix's gfx1151 is in no release list, yet it builds for itself). A bake file that
    declares no GFX_ARCH builds as written: only the node's own arch names the build."""
    if not declares_arch:
        return (node_gfx,) if node_gfx else ()
    return tuple(dict.fromkeys(a for a in (*listed, *FLEET_ARCHES, node_gfx) if a))


def launch_arches(bake: BakeFile, node_gfx: str | None = None) -> tuple[str, ...]:
    """`accepted_arches` for this bake file."""
    return accepted_arches(bake.arches, node_gfx, ARCH_VARIABLE in bake.variables)


def default_arch(bake: BakeFile) -> str | None:
    """The arch a launch builds when none is chosen (`rocmtui bake` and the console alike):
    GFX_ARCH's literal default, else the first the file lists, else the fleet's default; None
    for a bake file with no GFX_ARCH (nothing to choose)."""
    variable = bake.variables.get(ARCH_VARIABLE)
    if variable is None:
        return None
    return variable.default or next(iter(bake.arches), FLEET_ARCHES[0])


def check_arch(bake: BakeFile, arch: str | None, node: NodeConfig) -> str:
    """The arch a launch of this bake file on `node` builds: `arch` when accepted there, the
    default when None; LaunchError otherwise. A bake file with no GFX_ARCH takes no arch but
    the node's own, and records that (or none, "")."""
    if ARCH_VARIABLE not in bake.variables:
        if arch and arch != node.gfx:
            raise LaunchError(
                f"--arch {arch}: {bake.path.name} declares no {ARCH_VARIABLE} variable, so no "
                "arch can be chosen; leave --arch out"
            )
        return node.gfx or ""
    chosen = arch or default_arch(bake)
    if chosen not in launch_arches(bake, node.gfx):
        anywhere = launch_arches(bake)  # on any node: the bake file's and the fleet's
        own = f"; {node.name} is {node.gfx}" if node.gfx and node.gfx not in anywhere else ""
        raise LaunchError(f"unknown arch {chosen!r}; accepted: {', '.join(anywhere)}{own}")
    return str(chosen)


# -- nodes and variables ----------------------------------------------------------------------


def pick_node(config: FleetConfig, node_name: str | None) -> NodeConfig:
    """The named node (LaunchError if unknown), else the local node, else the first."""
    if not config.nodes:
        where = config.source or "the built-in default"
        raise LaunchError(f"no node to build on: {where} has no [[nodes]] entry")
    if node_name:
        node = config.node(node_name)
        if node is None:
            names = ", ".join(n.name for n in config.nodes)
            raise LaunchError(f"no node {node_name!r} in the fleet file (nodes: {names})")
        return node
    return next((n for n in config.nodes if n.local), config.nodes[0])


def check_overrides(bake: BakeFile, overrides: Mapping[str, str]) -> None:
    """Refuse overrides of undeclared variables, and GFX_ARCH (that is --arch)."""
    for name in overrides:
        if name == ARCH_VARIABLE:
            raise LaunchError(f"set {ARCH_VARIABLE} with --arch, not as a variable override")
        if name not in bake.variables:
            raise LaunchError(
                f"{name!r} is not a variable of the bake file; only declared variables can be "
                "overridden"
            )


# -- targets ----------------------------------------------------------------------------------


def static_names(bake: BakeFile) -> set[str]:
    """Every target and group name written in the file (matrix blocks by their label)."""
    return set(bake.targets) | set(bake.groups)


def target_pushes(bake: BakeFile, target: str, printed: Mapping[str, Any] | None = None) -> bool:
    """Whether the target pushes to a registry (its own or an inherited output); with `printed`
    (`resolve_target`'s answer), whether any target bake resolved for the name pushes."""
    if printed is not None:
        return any(printed_pushes(body) for body in printed_targets(printed).values())
    if target in bake.pushing_targets:
        return True
    entry = bake.targets.get(target)
    return entry is not None and entry.pushes


def unknown_target(path: Path, target: str, names: Iterable[str]) -> LaunchError:
    """The one-line refusal of a name bake does not know, with up to three close matches."""
    shown = sorted(n for n in names if not n.startswith("_"))  # `_x` are bases, not builds
    close = difflib.get_close_matches(target, shown, n=8, cutoff=0.6)
    # difflib ranks pytorch-gfx1250 above pytorch-gfx1201 for pytorch-gfx1202: fewest edits first
    close = sorted(close, key=lambda name: _edits(target, name))[:3]
    hint = f" (did you mean: {', '.join(close)}?)" if close else ""
    return LaunchError(f"no target {target!r} in {path}{hint}")


def _edits(a: str, b: str) -> int:
    """Levenshtein distance (names are short; this runs only on a refusal)."""
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
    return row[-1]


def resolve_target(
    bake: BakeFile,
    target: str,
    env: Mapping[str, str],
    timeout: float = RESOLVE_TIMEOUT,
) -> dict[str, Any] | None:
    """Check that bake accepts `target`. None for a `target` block of the file (nothing runs:
    launches stay cheap); any other name (group, matrix name) is `bake --print`ed with `env`,
    the job's own environment, since matrix names follow variables, and that JSON returned. A
    name bake refuses raises LaunchError naming the file and the target, with close matches
    from `bakeprint.resolved_names`; any other bake failure is raised as bake reported it."""
    if target in bake.targets:
        return None
    # on first use: kept off `status`
    from rocmtui.core.bake.resolve import BuildxMissing, bake_print, resolved_names

    try:
        return bake_print(bake.path, [target], env, timeout)
    except BuildxMissing:
        if target in static_names(bake):
            raise  # a group written in the file: buildx is needed to build it anyway
        raise unknown_target(bake.path, target, static_names(bake)) from None
    except BakeError as exc:
        refused = exc
    try:
        known = resolved_names(bake, env, timeout)
    except BakeError:
        raise refused from None
    if target in known:
        raise refused  # bake knows the name but cannot resolve it: its own message says why
    raise unknown_target(bake.path, target, known) from None


def printed_view(
    bake: BakeFile, target: str, env: Mapping[str, str], timeout: float = RESOLVE_TIMEOUT
) -> dict[str, Any]:
    """`bake --print TARGET` under `env` (the job's own environment), or `{}` when bake cannot
    answer: callers then fall back to what the bake file says (the build itself will fail and
    say why)."""
    # on first use: kept off `status`
    from rocmtui.core.bake.resolve import BuildxMissing, bake_print

    try:
        return bake_print(bake.path, [target], dict(env), timeout)
    except (BakeError, BuildxMissing):
        return {}
