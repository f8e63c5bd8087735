"""The monitor's line protocol: one JSON object per line, both ways (see the package doc).

From the monitor: a snapshot line (`FleetSnapshot.to_json()`, recognised by its `nodes`), or,
first on a socket session, a hello line (`{"hello": {...}}`). From a console: any line asks for
a round now. A field this side does not know is ignored, so an older console reads a newer
monitor's lines.
"""

from __future__ import annotations

import json
import time
from typing import Any

from msgspec import Struct
from msgspec.structs import asdict, fields

from rocmtui.core.snapshots import (
    BuilderInfo,
    FleetSnapshot,
    HostStats,
    NodeSnapshot,
    ServiceSnapshot,
)
from rocmtui.core.states import NodeState, ServiceState

PROTOCOL = 1
MAX_LINE = 16 * 1024 * 1024  # bytes: a 100-node snapshot is ~100 KB; beyond this, not ours


class ProtocolError(ValueError):
    """A line that is neither a hello nor a snapshot (its text says why)."""


class Hello(Struct, frozen=True):
    """Who the monitor on the other end of a socket is."""

    protocol: int
    pid: int
    fleet: str  # the fleet file's path, or "built-in default"
    started_at: float  # wall clock
    latest_taken_at: float | None  # its latest snapshot's time (None: no round yet)
    metrics: str | None = None  # the /metrics URL, when it serves one
    version: str = ""

    def to_json(self) -> dict[str, Any]:
        """The hello line's payload."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: Any) -> Hello:
        """Read a hello payload (ProtocolError when it is not one)."""
        if not isinstance(data, dict):
            raise ProtocolError("hello is not an object")
        try:
            latest = data.get("latest_taken_at")
            metrics = data.get("metrics")
            return cls(
                protocol=int(data["protocol"]),
                pid=int(data["pid"]),
                fleet=str(data["fleet"]),
                started_at=float(data["started_at"]),
                latest_taken_at=None if latest is None else float(latest),
                metrics=None if metrics is None else str(metrics),
                version=str(data.get("version") or ""),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ProtocolError(f"hello without a valid {exc}") from None


def hello_line(hello: Hello) -> bytes:
    """The line that opens a socket session."""
    return json.dumps({"hello": hello.to_json()}).encode() + b"\n"


def snapshot_line(snapshot: FleetSnapshot, now: float | None = None) -> bytes:
    """One snapshot as a line."""
    return json.dumps(snapshot.to_json(now=now)).encode() + b"\n"


def _known(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in data.items() if k in names}


def decode(data: dict[str, Any]) -> FleetSnapshot:
    """A FleetSnapshot from `FleetSnapshot.to_json()` output."""
    nodes = []
    for raw in data["nodes"]:
        node = _known(NodeSnapshot, raw)
        node["state"] = NodeState(node["state"])
        if node.get("builder"):
            builder = _known(BuilderInfo, node["builder"])
            builder["platforms"] = tuple(builder.get("platforms") or ())
            node["builder"] = BuilderInfo(**builder)
        if node.get("host"):
            node["host"] = HostStats(**_known(HostStats, node["host"]))
        nodes.append(NodeSnapshot(**node))

    def service(raw: dict[str, Any]) -> ServiceSnapshot:
        svc = _known(ServiceSnapshot, raw)
        svc["state"] = ServiceState(svc["state"])
        svc["extras"] = tuple(tuple(pair) for pair in svc.get("extras") or ())
        return ServiceSnapshot(**svc)

    return FleetSnapshot(
        taken_at=float(data["taken_at"]),
        nodes=tuple(nodes),
        registry=service(data["registry"]),
        webdav=service(data["webdav"]),
        duration=float(data.get("duration") or 0.0),
        problems=tuple(data.get("problems") or ()),
        pending=tuple(data.get("pending") or ()),
        probing=tuple(data.get("probing") or data.get("pending") or ()),
        failed_rounds=int(data.get("failed_rounds") or 0),
    )


def read_line(raw: bytes) -> FleetSnapshot | Hello:
    """A line from the monitor, decoded (ProtocolError when it is neither kind)."""
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise ProtocolError(f"not JSON: {exc}") from None
    if isinstance(data, dict) and "hello" in data:
        return Hello.from_json(data["hello"])
    if not isinstance(data, dict):
        raise ProtocolError("not a JSON object")
    try:
        return decode(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise ProtocolError(f"{type(exc).__name__}: {exc}") from None


def age_of(taken_at: float | None, now: float | None = None) -> float | None:
    """Seconds since `taken_at` (None stays None)."""
    if taken_at is None:
        return None
    return max(0.0, (time.time() if now is None else now) - taken_at)
