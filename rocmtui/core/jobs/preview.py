"""What a launch will do, decided once before anything starts: the console's bake dialog shows
it, and `launch_job` takes the same decisions from it.

One function answers, for a name, arch, node, push switch and overrides: the arch the build
really has (a matrix name fixes its own), the node, whether it pushes (the switch, or any
target bake resolved whose output is a registry), the registry hosts of the tags it would
push, which of them the docker config has no login for, and `bake --print` under the job's
own environment. Whether a launch pushes is never decided anywhere else.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rocmtui.core.bakefile import ARCH_VARIABLE, BakeError
from rocmtui.core.config import FleetConfig, NodeConfig
from rocmtui.core.jobs.plan import (
    LaunchError,
    bake_path,
    check_overrides,
    known_arches,
    names_of,
    node_environment,
    pick_node,
    resolve_target,
    target_pushes,
    variable_default,
)
from rocmtui.core.jobs.printed import pinned_arch


@dataclass(frozen=True)
class LaunchPreview:
    """A launch resolved but not started (see the module doc). `child_env` is bake's whole
    environment: never shown or stored as it is."""

    target: str
    arch: str
    node: NodeConfig
    pushes: bool
    push_hosts: tuple[str, ...]  # registries of the tags it pushes (empty when it does not)
    missing_logins: tuple[str, ...]  # of those, the ones the docker config has no entry for
    printed: Mapping[str, Any]  # `bake --print TARGET` under child_env ({} when bake failed)
    print_error: str | None  # why bake could not print it (the build would fail the same way)
    overrides: Mapping[str, str]
    child_env: Mapping[str, str] = field(repr=False)
    pinned: bool = False  # the name fixed another arch than asked (`pytorch-gfx1201`)


def default_arch(bake: Any) -> str | None:
    """The arch a launch builds when none is chosen: the bake file's GFX_ARCH default, as
    `rocmtui bake` and the console both use it."""
    arches = known_arches(bake)
    return variable_default(bake, ARCH_VARIABLE) or (arches[0] if arches else None)


def preview_launch(
    config: FleetConfig,
    bake: Any,
    target: str,
    arch: str | None,
    node_name: str | None,
    push: bool,
    env: Mapping[str, str],
    overrides: Mapping[str, str],
) -> LaunchPreview:
    """Resolve a launch (see the module doc). Raises LaunchError for an unknown node, arch,
    name or variable, and BakeError when bake refuses the name; a target block bake cannot
    print comes back with `print_error` set."""
    from rocmtui.core.bakeprint import fleet_variables
    from rocmtui.core.jobs.registries import docker_config_hosts, push_hosts

    # the fleet file's [variables] first (the dev fleet's REGISTRY), the caller's on top
    overrides = fleet_variables(config.variables, bake) | dict(overrides)
    node = pick_node(config, node_name)
    arches = known_arches(bake)
    if ARCH_VARIABLE not in bake.variables:
        # nothing in the file reads an arch: it builds as written; the record names the
        # node's own arch when the fleet file gives one, else none ("")
        if arch and arch != node.gfx:
            raise LaunchError(
                f"--arch {arch}: {bake_path(config, bake).name} declares no {ARCH_VARIABLE} "
                "variable, so no arch can be chosen; leave --arch out"
            )
        arch = node.gfx or ""
    else:
        arch = arch or default_arch(bake)
    # the node's own arch is always buildable there (snoc-strix's gfx1151 is in no release list)
    if arch is None or (arch and arch not in arches and arch != node.gfx):
        own = f"; {node.name} is {node.gfx}" if node.gfx and node.gfx not in arches else ""
        raise LaunchError(f"unknown arch {arch!r}; the bake file knows: {', '.join(arches)}{own}")
    check_overrides(bake, overrides)
    declared = names_of(bake.variables)
    child_env = node_environment(node, arch, env, overrides, declared)
    # a target block: no bake run yet; a group or matrix name: bake's view under the job's env
    printed = resolve_target(config, bake, target, child_env)
    pinned = pinned_arch(printed) if printed is not None else None
    pinned = pinned if pinned != arch else None  # one arch for all of them: GFX_ARCH's own
    if pinned:
        # the matrix fixed the arch (`pytorch-gfx1201`): record, lock and label what is built
        arch = pinned
        child_env = node_environment(node, arch, env, overrides, declared)
        printed = None  # that print was made with the other GFX_ARCH
    print_error = None
    if printed is None:
        from rocmtui.core.bakeprint import bake_print
        from rocmtui.core.jobs.plan import RESOLVE_TIMEOUT

        try:
            path = bake_path(config, bake)
            printed = bake_print(path, [target], dict(child_env), RESOLVE_TIMEOUT)
        except BakeError as exc:  # (BuildxMissing too) the build itself would fail the same way
            printed, print_error = {}, str(exc)
    pushes = push or target_pushes(bake, target, printed or None)
    hosts = push_hosts(config, bake, target, child_env, printed) if pushes else set()
    missing = hosts - docker_config_hosts(child_env)
    return LaunchPreview(
        target=target,
        arch=arch,
        node=node,
        pushes=pushes,
        push_hosts=tuple(sorted(hosts)),
        missing_logins=tuple(sorted(missing)),
        printed=printed,
        print_error=print_error,
        overrides=dict(overrides),
        child_env=child_env,
        pinned=bool(pinned),
    )
