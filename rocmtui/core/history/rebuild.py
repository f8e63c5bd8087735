"""`r` on a build started elsewhere: the same launch rocmtui's own rebuild makes.

A job of rocmtui's own keeps its target, arch, node, push switch and overrides; a build found
in BuildKit's history has a target, a node and build args instead. `rebuild_request` turns
those into what the console's bake dialog opens with (and `rocmtui bake` would take): the
target BuildKit names, the arch from its `GFX_ARCH` build arg, its node, push when it pushed,
and as overrides every build arg the bake file declares as a variable whose value differs from
that variable's default. A redacted value (a secret) is never passed on: the launch's own
environment supplies it as for any launch, and `left_out` names it.
"""

from __future__ import annotations

from msgspec import Struct

from rocmtui.core.bake.targets import ARCH_VARIABLE, BakeFile
from rocmtui.core.jobs.command import JOB_BUILD_ARG
from rocmtui.core.jobs.record import JobRecord

__all__ = ["RebuildRequest", "rebuild_request"]


class RebuildRequest(Struct, frozen=True):
    """What `r` launches for a job: target, arch, node, push switch and variables."""

    target: str
    arch: str | None  # None: the build had no GFX_ARCH (the bake file's default applies)
    node: str
    push: bool
    overrides: tuple[tuple[str, str], ...] = ()
    left_out: tuple[str, ...] = ()  # build args not passed on (redacted secrets)


def rebuild_request(record: JobRecord, bake: BakeFile | None = None) -> RebuildRequest:
    """The launch that rebuilds `record` (see the module doc); a job of rocmtui's own gives
    back exactly what it built. `bake` is the bake file read (without one, every build arg
    but the arch and rocmtui's own job arg is an override)."""
    outside = record.outside
    if outside is None:
        return RebuildRequest(
            target=record.target,
            arch=record.arch or None,
            node=record.node,
            push=record.push,
            overrides=tuple(sorted(record.overrides.items())),
        )
    overrides: list[tuple[str, str]] = []
    left_out: list[str] = []
    for name, value in sorted(outside.build_args.items()):
        if name in (ARCH_VARIABLE, JOB_BUILD_ARG):
            continue
        if bake is not None:
            variable = bake.variables.get(name)
            if variable is None:
                continue  # an arg of the target itself, not a variable: bake sets it again
            if variable.default == value:
                continue
        if "<redacted:" in value:
            left_out.append(name)
            continue
        overrides.append((name, value))
    target = outside.target or record.target
    return RebuildRequest(
        target=target,
        arch=outside.arch or record.arch or None,
        node=record.node,
        push=outside.pushes or record.push,
        overrides=tuple(overrides),
        left_out=tuple(left_out),
    )
