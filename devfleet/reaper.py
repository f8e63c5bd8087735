"""Stop what a run that died hard (SIGKILL, OOM) left behind, from the ledgers it wrote.

A ledger (`ledger.use_ledger`) records each live part by kind with what `from_record` needs to
rebuild its handle; `reap(dir)` rebuilds the parts of every ledger whose owner process is gone
and stops them. Ledgers of live owners are left alone, so parallel runs never touch each
other's parts.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from devfleet import processes
from devfleet.dockerd import EngineHandle
from devfleet.exporters import ExporterHandle
from devfleet.forward import ForwardHandle
from devfleet.ledger import Part
from devfleet.services import ServiceHandle
from devfleet.sshhost import SshHostHandle

#: A part's kind in a ledger -> how its handle is rebuilt from its record.
REBUILD: Mapping[str, Callable[[dict[str, Any]], Part]] = {
    "engine": EngineHandle.from_record,
    "service": ServiceHandle.from_record,
    "forward": ForwardHandle.from_record,
    "sshd": SshHostHandle.from_record,
    "node_exporter": ExporterHandle.from_record,
}


def reap(directory: Path) -> int:
    """Stop the parts recorded by ledgers in `directory` whose owner process is gone.

    Returns how many parts were stopped. Ledgers of live owners are left alone.
    """
    stopped = 0
    for path in sorted(Path(directory).glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if processes.alive(int(data.get("owner_pid", 0)), data.get("owner_start_time")):
            continue
        for entry in reversed(data.get("parts", [])):
            with contextlib.suppress(Exception):
                part = REBUILD[entry["kind"]](entry["record"])
                part.stop()
                stopped += 1
        with contextlib.suppress(OSError):
            path.unlink()
    return stopped
