"""The monitor's line protocol: one JSON object per line, both ways (see the package doc).

From the monitor: a snapshot line (`snapshotviews.snapshot_json`, recognised by its `nodes`), or,
first on a socket session, a hello line (`{"hello": {...}}`). From a console: any line asks for
a round now. A field this side does not know is ignored, so an older console reads a newer
monitor's lines.
"""

from __future__ import annotations

import json
import time
from typing import Any

from msgspec import DecodeError, Struct, ValidationError, convert
from msgspec.json import Decoder
from msgspec.structs import asdict, replace

from rocmtui.core.snapshots import FleetSnapshot
from rocmtui.core.snapshotviews import snapshot_json

PROTOCOL = 1
MAX_LINE = 16 * 1024 * 1024  # bytes: a 100-node snapshot is ~100 KB; beyond this, not ours
_LINE = Decoder()  # a line as plain JSON values, validated into the Structs by `convert`


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
        try:
            return convert(data, cls)
        except ValidationError as exc:
            raise ProtocolError(f"hello: {exc}") from None


def hello_line(hello: Hello) -> bytes:
    """The line that opens a socket session."""
    return json.dumps({"hello": hello.to_json()}).encode() + b"\n"


def snapshot_line(snapshot: FleetSnapshot, now: float | None = None) -> bytes:
    """One snapshot as a line."""
    return json.dumps(snapshot_json(snapshot, now=now)).encode() + b"\n"


def decode(data: Any) -> FleetSnapshot:
    """A FleetSnapshot from `snapshot_json` output, validated into the Structs by
    msgspec (types, enums, nested objects; fields this side does not know are ignored, which
    lets an older console read a newer monitor): anything malformed is a ProtocolError."""
    try:
        snapshot = convert(data, FleetSnapshot)
    except ValidationError as exc:
        raise ProtocolError(str(exc)) from None
    if "probing" not in data and snapshot.pending:  # a monitor from before `probing`
        snapshot = replace(snapshot, probing=snapshot.pending)
    return snapshot


def read_line(raw: bytes) -> FleetSnapshot | Hello:
    """A line from the monitor, decoded (ProtocolError when it is neither kind)."""
    try:
        data = _LINE.decode(raw)
    except DecodeError as exc:
        raise ProtocolError(f"not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ProtocolError("not a JSON object")
    if "hello" in data:
        return Hello.from_json(data["hello"])
    return decode(data)


def age_of(taken_at: float | None, now: float | None = None) -> float | None:
    """Seconds since `taken_at` (None stays None)."""
    if taken_at is None:
        return None
    return max(0.0, (time.time() if now is None else now) - taken_at)
