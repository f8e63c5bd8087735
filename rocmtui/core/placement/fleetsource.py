"""The fleet snapshot a one-shot placement (`rocmtui bake --node auto`) judges by.

A running monitor's latest snapshot when one answers within `MONITOR_WAIT` (no probe at all:
a few milliseconds), else one probe round of its own under the fleet file's deadline. Blocking.
"""

from __future__ import annotations

import asyncio

from rocmtui.core.config.fleetfile import FleetConfig
from rocmtui.core.hostmonitor.client import MonitorUnavailable, attach
from rocmtui.core.probes.round import probe_fleet
from rocmtui.core.snapshots import FleetSnapshot

MONITOR_WAIT = 0.5  # s for a running monitor to send its latest snapshot


def from_monitor(config: FleetConfig, wait: float = MONITOR_WAIT) -> FleetSnapshot | None:
    """The running monitor's latest snapshot, or None (none runs, it has no round yet, or it
    did not answer within `wait`)."""
    conn = attach(config, wait)
    if conn is None:
        return None
    try:
        if conn.hello is None or conn.hello.latest_taken_at is None:
            return None
        for snapshot in conn.rounds(wait):
            return snapshot
        return None
    except MonitorUnavailable:
        return None
    finally:
        conn.close()


def fleet_snapshot(config: FleetConfig, deadline: float | None = None) -> tuple[FleetSnapshot, str]:
    """A snapshot and where it came from: "monitor" or "probe"."""
    found = from_monitor(config)
    if found is not None:
        return found, "monitor"

    return asyncio.run(probe_fleet(config, deadline=deadline)), "probe"


__all__ = ["MONITOR_WAIT", "fleet_snapshot", "from_monitor"]
