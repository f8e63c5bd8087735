"""Where a console's fleet snapshots come from: the host's monitor, or a child of its own.

Both speak the same lines (rocmtui/core/hostmonitor/wire.py) and look the same to the relay
(`FleetBackend.run_monitor`): `rounds()` blocks in a worker thread and yields each snapshot (a
child's unreadable line as its error text), `poke()` asks for a round, `close()` ends the source
without waiting, and `ended()` says why the rounds stopped.

`open_source` is what the console does first thing, before Textual is imported: attach to a
running monitor for its fleet file (one flock check when none runs), else start its own child.
Nothing here imports a probe library; an attached console never loads one.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from rocmtui.core.config.fleetfile import ConfigError, load_config
from rocmtui.core.hostmonitor import ownchild

if TYPE_CHECKING:
    from rocmtui.core.config.fleetfile import FleetConfig
    from rocmtui.core.hostmonitor.client import MonitorConnection
    from rocmtui.core.snapshots import FleetSnapshot

OWN = "own"  # a child of this console's
MONITOR = "monitor"  # the host's monitor, shared


class MonitorFailed(RuntimeError):
    """The console's own monitor process ended, or sent a line that is not a round."""

    @classmethod
    def ended(cls, returncode: int) -> MonitorFailed:
        """The process ended while the console still wanted rounds."""
        if returncode >= 0:
            return cls(f"the monitor process exited with status {returncode}")
        try:
            how = signal.Signals(-returncode).name
        except ValueError:
            how = f"signal {-returncode}"
        return cls(f"the monitor process was killed by {how}")


class MonitorGone(MonitorFailed):
    """The host's monitor went away or stopped answering: the console probes on its own."""


class ProbeSource(Protocol):
    """A source of fleet snapshots."""

    kind: str  # OWN or MONITOR

    def describe(self) -> str:
        """What it is, for the operator ("shared monitor (pid 4242)")."""

    def rounds(self) -> Iterator[FleetSnapshot | str]:
        """Each round as it comes (blocks: a worker thread); ends with the source."""

    def poke(self) -> None:
        """Ask for a round now; never blocks."""

    def alive(self) -> bool:
        """False once it has ended (or was closed)."""

    def close(self) -> None:
        """End it without waiting (safe on the event loop)."""

    def ended(self) -> MonitorFailed:
        """Why its rounds stopped (MonitorGone for the host's monitor)."""

    def stop(self, grace: float) -> None:
        """End it, waiting up to `grace` seconds (a child is reaped)."""


class ChildSource:
    """The console's own monitor child (rocmtui.core.hostmonitor.ownchild), over its pipes."""

    kind = OWN

    def __init__(self, child: subprocess.Popen[bytes]) -> None:
        self.child = child

    def describe(self) -> str:
        return f"own monitor process (pid {self.child.pid})"

    def rounds(self) -> Iterator[FleetSnapshot | str]:
        return ownchild.rounds(self.child)

    def poke(self) -> None:
        ownchild.poke(self.child)

    def alive(self) -> bool:
        return self.child.poll() is None

    def close(self) -> None:
        """End it without waiting (safe on the event loop)."""
        if self.child.poll() is None:
            with contextlib.suppress(OSError, ValueError):
                if self.child.stdin is not None:
                    self.child.stdin.close()  # it would end after its round; do not wait
            self.child.terminate()

    def ended(self) -> MonitorFailed:
        return MonitorFailed.ended(self.child.wait())

    def stop(self, grace: float) -> None:
        """End it and reap it (the console is closing)."""
        ownchild.stop(self.child, grace)


class SocketSource:
    """A session with the host's monitor (rocmtui.core.hostmonitor)."""

    kind = MONITOR

    def __init__(self, conn: MonitorConnection, idle_timeout: float) -> None:
        self.conn = conn
        self.idle_timeout = idle_timeout
        self.pid = conn.hello.pid if conn.hello else None
        self._error: str | None = None
        self._open = True

    def describe(self) -> str:
        return f"shared monitor (pid {self.pid})"

    def rounds(self) -> Iterator[FleetSnapshot | str]:
        # on first use: kept off the console's start
        from rocmtui.core.hostmonitor.client import MonitorUnavailable

        if not self._open:
            return
        try:
            yield from self.conn.rounds(self.idle_timeout)
        except MonitorUnavailable as exc:
            self._error = str(exc)
        self._open = False

    def poke(self) -> None:
        self.conn.poke()

    def alive(self) -> bool:
        return self._open

    def close(self) -> None:
        self._open = False
        self.conn.close()

    def ended(self) -> MonitorFailed:
        self.close()
        why = self._error or "it closed the connection"
        return MonitorGone(f"the shared monitor (pid {self.pid}) is gone: {why}")

    def stop(self, grace: float) -> None:
        self.close()


def find_monitor(config: FleetConfig) -> SocketSource | None:
    """A session with the fleet file's running monitor, if one answers within the deadline."""
    # on first use: kept off the console's start
    from rocmtui.core.hostmonitor.client import attach, idle_deadline

    conn = attach(config)
    return None if conn is None else SocketSource(conn, idle_deadline(config))


def open_source(config_path: Path | str | None) -> ProbeSource:
    """Attach to the fleet file's monitor, else start a child of our own (OSError when that
    cannot be started). A fleet file that does not load is the console's to report: then the
    child is started as before, and the console says what is wrong with the file."""
    try:
        config = load_config(config_path)
    except (ConfigError, OSError):
        config = None
    if config is not None:
        found = find_monitor(config)
        if found is not None:
            return found
    return ChildSource(ownchild.start(config_path))


def as_source(source: ProbeSource | subprocess.Popen[bytes]) -> ProbeSource:
    """A source for a bare child process (`rocmtui.cli.main` may hand one over)."""
    return ChildSource(source) if isinstance(source, subprocess.Popen) else source
