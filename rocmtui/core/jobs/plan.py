"""What a launch will do, decided once before anything starts: a `LaunchPlan`.

`resolve_plan` answers, for a name, arch, node, push switch and variables: the arch the build
really has (a matrix name fixes its own), the node, bake's whole environment, `bake --print`
under that environment, whether it pushes (the switch, or any target bake resolved whose
output is a registry), the registry hosts of the tags it would push and which of them the
docker config has no login for, the images it builds (its slots on the node), and the
privileges bake will ask for (`bake.entitlements`: reads and writes outside the bake file's
folder, `network.host`, `security.insecure`, devices), as the buildx that will run it checks
them. Whether a launch pushes, and what it must be granted, is never decided anywhere else.

The console's bake dialog shows a LaunchPlan and starts exactly that plan (`launch.start_plan`);
`rocmtui bake` resolves one and starts it at once (`launch.launch_job`). Nothing here starts
anything: a LaunchPlan is data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from msgspec import Struct

from rocmtui.core.bake.effective import fleet_variables
from rocmtui.core.bake.entitlements import Privilege, bake_checks, granted_by, requested_privileges
from rocmtui.core.bake.file import BakeError, BakeFile
from rocmtui.core.bake.plugin import plugin_version
from rocmtui.core.config.fleetfile import FleetConfig, NodeConfig
from rocmtui.core.jobs.checks import (
    RESOLVE_TIMEOUT,
    check_arch,
    check_overrides,
    pick_node,
    printed_view,
    resolve_target,
    target_pushes,
)
from rocmtui.core.jobs.command import (
    bake_workdir,
    build_argv,
    engine_assignments,
    node_environment,
)
from rocmtui.core.jobs.printed import image_keys, pinned_arch
from rocmtui.core.jobs.redaction import redact_argv
from rocmtui.core.jobs.registries import docker_config_hosts, push_hosts
from rocmtui.core.records import repr_without

__all__ = ["LaunchPlan", "images", "resolve_plan"]


class LaunchPlan(Struct, frozen=True):
    """A launch resolved but not started (see the module doc). `child_env` is bake's whole
    environment: never shown or stored as it is."""

    target: str
    arch: str
    node: NodeConfig
    bake_file: Path
    pushes: bool
    push_switch: bool  # `--push` as asked: push even a target whose output is not a registry
    push_hosts: tuple[str, ...]  # registries of the tags it pushes (empty when it does not)
    missing_logins: tuple[str, ...]  # of those, the ones the docker config has no entry for
    printed: Mapping[str, Any]  # `bake --print TARGET` under child_env ({} when bake failed)
    print_error: str | None  # why bake could not print it (the build would fail the same way)
    overrides: Mapping[str, str]
    child_env: Mapping[str, str]  # never in the repr: it holds the secrets bake is given
    pinned: bool = False  # the name fixed another arch than asked (`pytorch-gfx1201`)
    # what bake will refuse to run without `--allow` (its version's checks), sorted
    privileges: tuple[Privilege, ...] = ()
    takes_allow: bool = True  # the buildx that runs it has `bake --allow` (0.13 rejects it)

    def __repr__(self) -> str:
        return repr_without(self, "child_env")

    @property
    def ready(self) -> bool:
        """bake printed it: what the console's dialog may start (`rocmtui bake` starts any
        plan, and a build bake cannot print fails saying why)."""
        return self.print_error is None

    @property
    def slots(self) -> list[str]:
        """What it builds on its node, as slot keys (`printed.image_keys`): one launch at a
        time per image and node."""
        return image_keys(self.printed, self.target, self.arch)

    @property
    def workdir(self) -> Path:
        """Where bake runs (its paths, and the paths of `--allow`, are relative to it)."""
        return bake_workdir(self.bake_file)

    def ungranted(self, allow: Sequence[str]) -> tuple[Privilege, ...]:
        """The privileges it asks for that the `--allow` words `allow` do not cover."""
        where = str(self.workdir)
        return tuple(p for p in self.privileges if not granted_by(p, allow, where))

    def argv(
        self,
        metadata_file: str,
        docker: str = "docker",
        job_id: str | None = None,
        allow: Sequence[str] = (),
    ) -> list[str]:
        """bake's argument list, its metadata written to `metadata_file` (`job_id`: the job
        it is, named in a build arg BuildKit's history keeps; `allow`: what the operator
        granted, passed only to a buildx that takes `--allow`; see `command.build_argv`)."""
        return build_argv(
            self.bake_file, self.target, self.node, self.pushes, metadata_file, docker, job_id,
            allow if self.takes_allow else (),
        )  # fmt: skip

    def command(self, env: Mapping[str, str] | None = None, allow: Sequence[str] = ()) -> list[str]:
        """`VAR=value ... docker buildx bake ...` as the job record keeps it and the dialog
        shows it: secret names and `env`'s secret values redacted."""
        pairs = engine_assignments(self.node, self.arch, self.overrides)
        return redact_argv([*pairs, *self.argv("<job>/metadata.json", allow=allow)], env)


def resolve_plan(
    config: FleetConfig,
    bake: BakeFile,
    target: str,
    arch: str | None,
    node_name: str | None,
    push: bool,
    env: Mapping[str, str],
    overrides: Mapping[str, str],
) -> LaunchPlan:
    """Resolve a launch (see the module doc). Raises LaunchError for an unknown node, arch,
    name or variable, and BakeError when bake refuses the name; a target block bake cannot
    print comes back with `print_error` set."""
    from rocmtui.core.bake.resolve import bake_print  # at the call: tests count the calls

    # the fleet file's [variables] first (the dev fleet's REGISTRY), the caller's on top
    overrides = fleet_variables(config.variables, bake) | dict(overrides)
    node = pick_node(config, node_name)
    arch = check_arch(bake, arch, node)
    check_overrides(bake, overrides)
    declared = list(bake.variables)
    child_env = node_environment(node, arch, env, overrides, declared)
    # a target block: no bake run yet; a group or matrix name: bake's view under the job's env
    printed = resolve_target(bake, target, child_env)
    pinned = pinned_arch(printed) if printed is not None else None
    pinned = pinned if pinned != arch else None  # one arch for all of them: GFX_ARCH's own
    if pinned:
        # the matrix fixed the arch (`pytorch-gfx1201`): record, lock and label what is built
        arch = pinned
        child_env = node_environment(node, arch, env, overrides, declared)
        printed = None  # that print was made with the other GFX_ARCH
    print_error = None
    if printed is None:
        try:
            printed = bake_print(bake.path, [target], dict(child_env), RESOLVE_TIMEOUT)
        except BakeError as exc:  # (BuildxMissing too) the build itself would fail the same way
            printed, print_error = {}, str(exc)
    pushes = push or target_pushes(bake, target, printed or None)
    hosts = push_hosts(config, bake, target, child_env, printed) if pushes else set()
    missing = hosts - docker_config_hosts(child_env)
    takes_allow, checks_fs = bake_checks(plugin_version(child_env), child_env)
    asked = requested_privileges(printed, str(bake_workdir(bake.path)))
    asked = tuple(p for p in asked if checks_fs or not p.key.startswith("fs"))
    return LaunchPlan(
        target=target,
        arch=arch,
        node=node,
        bake_file=bake.path,
        pushes=pushes,
        push_switch=push,
        push_hosts=tuple(sorted(hosts)),
        missing_logins=tuple(sorted(missing)),
        printed=printed,
        print_error=print_error,
        overrides=dict(overrides),
        child_env=child_env,
        pinned=bool(pinned),
        privileges=asked,
        takes_allow=takes_allow,
    )


def images(
    bake: BakeFile,
    target: str,
    arch: str,
    env: Mapping[str, str],
    printed: Mapping[str, Any] | None = None,
    timeout: float = RESOLVE_TIMEOUT,
) -> list[str]:
    """What a launch of `target` builds, as slot keys: each image tag of every target bake
    resolves the name to (`tag:...`), `target:NAME@ARCH` for a target without tags.

    `pytorch` for gfx1201, `pytorch-gfx1201`, `pytorch-push` for gfx1201 and the group
    `gfx1201` all build the tag `.../pytorch:...-gfx1201`, so they share its slot. Targets bake
    builds only as another's context (`base` under `pytorch`) are not keys: `pytorch` and
    `triton` may build on one node at once, and BuildKit shares their base stage. `printed` is
    bake's view under exactly `env` when the caller has one; otherwise bake is asked here. If
    bake cannot answer, the name as given is the key (the build itself will say why)."""
    if printed is None:
        printed = printed_view(bake, target, env, timeout)
    return image_keys(printed, target, arch)
