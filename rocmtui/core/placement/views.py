"""`rocmtui bake --node auto --json`'s `placement` as Structs: msgspec encodes them in field
order (kw_only lets them stand as printed). Nothing reads this JSON back."""

from __future__ import annotations

from msgspec import Struct

from rocmtui.core.costbook.cost import Condition
from rocmtui.core.placement.facts import NodeEstimate, Placement


class NodeEstimateView(Struct, frozen=True, kw_only=True):
    """One node's estimate."""

    node: str
    condition: Condition
    condition_why: str
    eta_seconds: float | None
    eta_from: str
    running: list[str]
    load1: float | None
    cpu_count: int | None
    free_bytes: int | None
    eligible: bool
    why_not: str | None

    @classmethod
    def of(cls, e: NodeEstimate) -> NodeEstimateView:
        """The printed form of `e` (seconds rounded to 0.1)."""
        return cls(
            node=e.node, condition=e.condition, condition_why=e.condition_why,
            eta_seconds=None if e.eta is None else round(e.eta, 1), eta_from=e.eta_from,
            running=list(e.running), load1=e.load1, cpu_count=e.cpu_count,
            free_bytes=e.free_bytes, eligible=e.eligible, why_not=e.why_not,
        )  # fmt: skip


class PlacementView(Struct, frozen=True, kw_only=True):
    """The node chosen, why, and every node's estimate (fleet file order)."""

    target: str
    arch: str
    chosen: str | None
    why: str
    original: str | None
    kept_original: bool | None
    nodes: list[NodeEstimateView]

    @classmethod
    def of(cls, p: Placement) -> PlacementView:
        """The printed form of `p`."""
        return cls(
            target=p.target, arch=p.arch, chosen=p.chosen, why=p.why, original=p.original,
            kept_original=p.kept_original, nodes=[NodeEstimateView.of(e) for e in p.estimates],
        )  # fmt: skip


__all__ = ["NodeEstimateView", "PlacementView"]
