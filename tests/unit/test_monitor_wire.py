"""The monitor socket's line protocol read back: every malformed line is a `ProtocolError`,
the one error the console's client turns into "the monitor sent an unreadable line"; any other
exception (an `AttributeError` from a node that is not an object) ended the console's feed."""

from __future__ import annotations

import json
from typing import Any

import pytest

from rocmtui.core.hostmonitor.wire import Hello, ProtocolError, hello_line, read_line, snapshot_line
from rocmtui.core.snapshots import FleetSnapshot
from rocmtui.core.vitals.nodevitals import NodeVitals
from tests.support.snapshots import recorded


def good() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(snapshot_line(recorded.fleet(), now=recorded.NOW))
    return data


def broken(change: Any) -> bytes:
    data = good()
    change(data)
    return json.dumps(data).encode() + b"\n"


def _set(path: tuple[Any, ...], value: Any) -> Any:
    def change(data: Any) -> None:
        at = data
        for key in path[:-1]:
            at = at[key]
        at[path[-1]] = value

    return change


MALFORMED = {
    "a node that is a number": _set(("nodes", 0), 1),
    "nodes that are an object": _set(("nodes",), {"a": 1}),
    "a host that is a string": _set(("nodes", 0, "host"), "x"),
    "a builder that is a list": _set(("nodes", 1, "builder"), ["a"]),
    "a node state nobody knows": _set(("nodes", 0, "state"), "exploded"),
    "a node without a name": lambda d: d["nodes"][0].pop("name"),
    "a name that is a number": _set(("nodes", 0, "name"), 7),
    "a time that is a word": _set(("taken_at",), "soon"),
    "a registry that is null": _set(("registry",), None),
    "extras that are not pairs": _set(("registry", "extras"), [1, 2]),
    "problems that are numbers": _set(("problems",), [1]),
    "vitals that are a string": _set(("nodes", 0, "vitals"), "x"),
    "no webdav": lambda d: d.pop("webdav"),
}


@pytest.mark.parametrize("what", MALFORMED)
def test_a_malformed_snapshot_is_a_protocol_error(what: str) -> None:
    with pytest.raises(ProtocolError):
        read_line(broken(MALFORMED[what]))


@pytest.mark.parametrize(
    "raw",
    [b"[]\n", b"3\n", b"null\n", b"{\n", b'{"hello": 3}\n', b'{"hello": {"pid": "x"}}\n',
     b'{"hello": {"protocol": 1, "pid": [], "fleet": "f", "started_at": 1,'
     b' "latest_taken_at": null}}\n', b"\xff\xfe\n"],
)  # fmt: skip
def test_a_malformed_line_is_a_protocol_error(raw: bytes) -> None:
    with pytest.raises(ProtocolError):
        read_line(raw)


def test_snapshots_and_hellos_read_back_unchanged() -> None:
    for snap in (recorded.fleet(), recorded.fleet(think_down=True)):
        assert read_line(snapshot_line(snap, now=recorded.NOW)) == snap
    hello = Hello(1, 42, "/etc/rocmtui.toml", 1.5, None, "http://127.0.0.1:9464/metrics", "1.0")
    assert read_line(hello_line(hello)) == hello


def test_vitals_read_back_as_their_struct() -> None:
    snap = recorded.fleet()
    vitals = NodeVitals("snoc-strix", "engine", recorded.NOW, cpu_count=32, missing=("psi: no",))
    node = snap.nodes[0]
    from msgspec.structs import replace

    with_vitals = replace(snap, nodes=(replace(node, vitals=vitals), *snap.nodes[1:]))
    got = read_line(snapshot_line(with_vitals, now=recorded.NOW))
    assert isinstance(got, FleetSnapshot) and got == with_vitals


def test_an_older_monitor_without_probing_reads_pending_as_probing() -> None:
    data = good()
    data["pending"] = ["snoc-think"]
    data.pop("probing")
    got = read_line(json.dumps(data).encode())
    assert isinstance(got, FleetSnapshot) and got.probing == ("snoc-think",)
