"""What `r` on a matrix cell launches: the name that publishes the cell's tag, for its arch, on
the node the fleet file prefers for that arch.

- the target: the cell's pushing name (`pytorch-push`) when one builds the tag, so the rebuild
  lands in the registry; else the row's own name (it builds, and the cell says it is missing);
- the node: the first node of the fleet file whose `gfx` is the cell's arch (the fleet file
  says where that GPU is), else the local node, else the first.
"""

from __future__ import annotations

from msgspec import Struct

from rocmtui.core.config.fleetfile import FleetConfig
from rocmtui.core.matrix.cells import Cell, Row


class Rebuild(Struct, frozen=True):
    """A launch for one cell."""

    target: str
    arch: str
    node: str | None  # None: the fleet file has no node
    pushes: bool


def preferred_node(config: FleetConfig, arch: str) -> str | None:
    """The node the fleet file names for `arch`, else the local one, else the first; None in a
    fleet file with no node (the launch then says so)."""
    for node in config.nodes:
        if node.gfx == arch:
            return node.name
    local = next((n for n in config.nodes if n.local), None)
    return local.name if local else next((n.name for n in config.nodes), None)


def rebuild_for(config: FleetConfig, row: Row, cell: Cell) -> Rebuild | None:
    """The launch that rebuilds (and, when it can, publishes) `cell`; None for a cell the row
    builds nothing for."""
    if not cell.applies:
        return None
    target = cell.push_target or (
        row.name if row.name in cell.targets else next(iter(cell.targets), row.name)
    )
    return Rebuild(
        target, cell.arch, preferred_node(config, cell.arch), cell.push_target is not None
    )
