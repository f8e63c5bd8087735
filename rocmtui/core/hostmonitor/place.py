"""Where a fleet file's monitor lives: its socket and its lock, in the state folder.

`<state folder>/monitor-<key>.sock` and `monitor-<key>.lock`, `<key>` twelve hex digits of a
hash of the fleet file's resolved path (or of "built-in default"). The lock file is held with
flock by the monitor for its whole life and holds, as JSON, who it is (pid and start time,
fleet file, socket, metrics URL, since when): what a refused second monitor names.

A unix socket's path is limited to 108 bytes with its NUL (`sun_path`); a longer one fails with
a confusing error deep in `bind`, so `socket_path_problem` says so up front and how to fix it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from msgspec import Struct

from rocmtui.core.config.fleetfile import FleetConfig
from rocmtui.core.digests import sha256_hex
from rocmtui.core.paths import state_dir
from rocmtui.core.text.units import fmt_clock

SUN_PATH_MAX = 107  # bytes of a unix socket path: sun_path is 108 with the terminating NUL
BUILT_IN = "built-in default"


def fleet_name(config: FleetConfig) -> str:
    """What identifies the fleet file: its resolved path, or "built-in default"."""
    return str(config.source.resolve()) if config.source is not None else BUILT_IN


class Holder(Struct, frozen=True):
    """Who holds a monitor's lock, as it wrote it there."""

    pid: int | None
    start_time: int | None  # /proc/PID/stat field 22: the pid with this is one process
    fleet: str | None
    socket: str | None
    metrics: str | None
    started_at: float | None


class MonitorPlace(Struct, frozen=True):
    """The socket and lock of one fleet file's monitor."""

    folder: Path
    fleet: str

    @classmethod
    def for_config(cls, config: FleetConfig, env: Mapping[str, str] | None = None) -> MonitorPlace:
        """The place in the state folder the fleet file (and the environment) names."""
        return cls(state_dir(config, env), fleet_name(config))

    @property
    def key(self) -> str:
        """Twelve hex digits naming this fleet file's monitor."""
        return sha256_hex(self.fleet.encode())[:12]

    @property
    def socket(self) -> Path:
        """The unix socket consoles connect to."""
        return self.folder / f"monitor-{self.key}.sock"

    @property
    def lock(self) -> Path:
        """The file the monitor holds an flock on, holding who it is."""
        return self.folder / f"monitor-{self.key}.lock"

    def socket_path_problem(self) -> str | None:
        """Why the socket cannot be made here (its path is too long), or None."""
        size = len(os.fsencode(self.socket))
        if size <= SUN_PATH_MAX:
            return None
        return (
            f"the monitor's socket path {self.socket} is {size} bytes, more than a unix "
            f"socket allows ({SUN_PATH_MAX}): give the fleet file a shorter state_dir, or set "
            "ROCMTUI_STATE_DIR to a shorter folder"
        )

    def running(self) -> bool:
        """True while a monitor holds the lock (the kernel's word: it is alive)."""
        from rocmtui.core.jobs.locks import is_locked  # not on the attached console's way up

        try:
            return is_locked(self.lock)
        except OSError:
            return False

    def holder(self) -> Holder | None:
        """What the monitor holding the lock wrote there (None: unreadable or not yet)."""
        from rocmtui.core.jobs.locks import read_holder  # not on the attached console's way up

        return read_holder(self.lock, Holder)


def describe_holder(place: MonitorPlace, holder: Holder | None) -> str:
    """One line naming a running monitor, for a refusal or `rocmtui status`."""
    if holder is None or holder.pid is None:
        return f"a monitor holds {place.lock}"
    parts = [f"pid {holder.pid}"]
    if holder.started_at is not None:
        parts.append("since " + fmt_clock(holder.started_at))
    parts.append(f"socket {holder.socket or place.socket}")
    if holder.metrics:
        parts.append(f"metrics {holder.metrics}")
    return ", ".join(parts)
