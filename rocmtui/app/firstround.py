"""The first probe round, run in a child process while the console is still importing Textual.

`python -m rocmtui.app.firstround [FLEET_FILE]` runs one core probe round and prints the
`FleetSnapshot` as JSON. Importing the probes (docker, httpx) and Textual are both CPU-bound
and would run one after the other under the GIL; in a child process the round runs on the other
core, so the first frame already shows live fleet data. Later rounds run in the console's own
FleetMonitor. `decode` turns the JSON back into the snapshot the screen renders.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

from rocmtui.core.snapshots import (
    BuilderInfo,
    FleetSnapshot,
    HostStats,
    NodeSnapshot,
    ServiceSnapshot,
)
from rocmtui.core.states import NodeState, ServiceState


def start(config_path: Path | None) -> subprocess.Popen[bytes] | None:
    """Start the child (None if it cannot be started: the monitor's first round will do)."""
    argv = [sys.executable, "-m", "rocmtui.app.firstround"]
    if config_path is not None:
        argv.append(str(config_path))
    try:
        return subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
    except OSError:
        return None


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
    )


def collect(child: subprocess.Popen[bytes], timeout: float) -> FleetSnapshot | None:
    """Wait for the child's answer (blocks: call from a worker); None when it has none."""
    try:
        out, _ = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
        return None
    if child.returncode != 0 or not out:
        return None
    try:
        return decode(json.loads(out))
    except (ValueError, KeyError, TypeError):
        return None


def main(argv: Sequence[str]) -> int:
    """Probe once and print the snapshot as JSON."""
    from rocmtui.core.config import load_config
    from rocmtui.core.monitor import probe_fleet

    config = load_config(argv[0] if argv else None)
    snapshot = asyncio.run(probe_fleet(config))
    json.dump(snapshot.to_json(), sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
