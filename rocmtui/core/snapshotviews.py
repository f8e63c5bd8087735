"""A fleet snapshot as JSON: what `rocmtui status --json` prints and the monitor's wire carries
(`hostmonitor.wire`), read back there into `FleetSnapshot` by msgspec's `convert`.

Each node and service as its fields, then its `age` in seconds; the snapshot's own fields with
its age and `healthy` beside them. View Structs that extend the snapshots by what is computed,
encoded by msgspec (no dict built by hand).
"""

from __future__ import annotations

import time
from typing import Any

from msgspec import Struct, json

from rocmtui.core.snapshots import FleetSnapshot, NodeSnapshot, ServiceSnapshot
from rocmtui.core.vitals.views import VitalsView

# `age` is printed as the snapshots' `age()` says; the field is named apart from that method
AGE = {"age_seconds": "age"}


class NodeView(NodeSnapshot, frozen=True, kw_only=True, rename=AGE):
    """A node as printed: its fields (its vitals as printed), then its age."""

    vitals: VitalsView | None = None  # type: ignore[assignment]  # the printed form
    age_seconds: float

    @classmethod
    def of(cls, node: NodeSnapshot, now: float) -> NodeView:
        """The printed form of `node`, its age as of `now`."""
        fields = {name: getattr(node, name) for name in NodeSnapshot.__struct_fields__}
        vitals = node.vitals
        fields["vitals"] = VitalsView.of(vitals, now) if vitals is not None else None
        return cls(**fields, age_seconds=round(node.age(now), 3))


class ServiceView(ServiceSnapshot, frozen=True, kw_only=True, rename=AGE):
    """A service as printed: its fields, then its age."""

    age_seconds: float

    @classmethod
    def of(cls, service: ServiceSnapshot, now: float) -> ServiceView:
        """The printed form of `service`, its age as of `now`."""
        fields = {name: getattr(service, name) for name in ServiceSnapshot.__struct_fields__}
        return cls(**fields, age_seconds=round(service.age(now), 3))


class FleetView(Struct, frozen=True, kw_only=True):
    """A fleet snapshot as printed."""

    taken_at: float
    age: float
    duration: float
    healthy: bool
    nodes: tuple[NodeView, ...]
    registry: ServiceView
    webdav: ServiceView
    problems: tuple[str, ...]
    pending: tuple[str, ...]
    probing: tuple[str, ...]
    failed_rounds: int

    @classmethod
    def of(cls, snapshot: FleetSnapshot, now: float) -> FleetView:
        """The printed form of `snapshot`, every age as of `now`."""
        return cls(
            taken_at=snapshot.taken_at,
            age=round(max(0.0, now - snapshot.taken_at), 3),
            duration=round(snapshot.duration, 3),
            healthy=snapshot.healthy,
            nodes=tuple(NodeView.of(n, now) for n in snapshot.nodes),
            registry=ServiceView.of(snapshot.registry, now),
            webdav=ServiceView.of(snapshot.webdav, now),
            problems=snapshot.problems,
            pending=snapshot.pending,
            probing=snapshot.probing,
            failed_rounds=snapshot.failed_rounds,
        )


def snapshot_json(snapshot: FleetSnapshot, now: float | None = None) -> dict[str, Any]:
    """`snapshot` as a JSON-ready dict (plain dicts and lists), its ages as of `now`."""
    view = FleetView.of(snapshot, time.time() if now is None else now)
    data: dict[str, Any] = json.decode(json.encode(view))
    return data


__all__ = ["FleetView", "NodeView", "ServiceView", "snapshot_json"]
