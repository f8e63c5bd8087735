"""`rocmtui bake TARGET --node auto`: the node that would finish first, chosen and said why.

Kept apart from `cli/bake.py` so a launch on a named node imports none of it.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rocmtui.core.bake.file import BakeFile
    from rocmtui.core.config.fleetfile import FleetConfig
    from rocmtui.core.placement.facts import Placement

AUTO = "auto"


def choose_node(
    config: FleetConfig,
    bake: BakeFile,
    target: str,
    arch: str | None,
    overrides: Mapping[str, str] | None = None,
) -> Placement:
    """The placement of `target` for `arch` (None: the bake file's default) on this fleet,
    with the launch's variables (`--set`)."""
    # on first use: kept off `--help`
    from rocmtui.core.bake.file import ARCH_VARIABLE
    from rocmtui.core.jobs.checks import default_arch
    from rocmtui.core.placement.fleetsource import fleet_snapshot
    from rocmtui.core.placement.gather import placement_for

    declares = ARCH_VARIABLE in bake.variables
    chosen_arch = arch or default_arch(bake) or ""
    snapshot, _ = fleet_snapshot(config)
    return placement_for(
        config, snapshot, target, chosen_arch, bake.arches, declares, overrides=overrides
    )


def placement_json(placement: Placement) -> dict[str, Any]:
    """The placement's view (`core.placement.views`) as plain data, for bake's JSON answer."""
    # on first use: kept off `--help`
    from rocmtui.core.costbook.views import plain
    from rocmtui.core.placement.views import PlacementView

    return plain(PlacementView.of(placement))


def say(placement: Placement) -> None:
    """The choice and every node's estimate, on stderr (stdout keeps the job id alone)."""
    # on first use: kept off `--help`
    from rocmtui.core.text.sanitize import one_line

    head = "chose" if placement.chosen else "no node"
    print(f"rocmtui bake: --node auto {head}: {one_line(placement.why)}", file=sys.stderr)
    for e in placement.estimates:
        mark = "*" if e.node == placement.chosen else " "
        print(f"  {mark} {one_line(e.line())}", file=sys.stderr)
        if e.eligible:
            print(f"      {one_line(e.detail())}", file=sys.stderr)


__all__ = ["AUTO", "choose_node", "placement_json", "say"]
