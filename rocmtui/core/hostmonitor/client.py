"""A console's side of the monitor socket, and `rocmtui status`'s question "is one running?".

Blocking calls, each under a deadline: call them from a worker thread (or a one-shot command).
Imports no probe library (docker SDK, httpx, psutil, `core.probes.round`): an attached console never
loads them.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Iterator
from typing import Any

from msgspec import Struct, json

from rocmtui.core.config.fleetfile import FleetConfig
from rocmtui.core.hostmonitor.place import Holder, MonitorPlace, describe_holder
from rocmtui.core.hostmonitor.wire import (
    MAX_LINE,
    PROTOCOL,
    Hello,
    ProtocolError,
    age_of,
    read_line,
)
from rocmtui.core.snapshots import FleetSnapshot
from rocmtui.core.text.units import fmt_seconds

CONNECT_DEADLINE = 1.0  # s for a monitor to accept a connection and say hello


class MonitorUnavailable(Exception):
    """The monitor did not answer as it should (the text says how, for the operator)."""


def idle_deadline(config: FleetConfig) -> float:
    """Seconds without a line after which a monitor counts as hung: it sends a snapshot every
    round (every `refresh_seconds`, a round lasting up to the probe deadline), so three missed
    rounds is not a slow fleet but a stuck monitor."""
    return max(10.0, 3 * config.refresh_seconds + config.probe_deadline_seconds + 2.0)


class MonitorConnection:
    """One session with a running monitor: its hello, then its snapshots."""

    def __init__(self, sock: socket.socket, place: MonitorPlace) -> None:
        self.sock = sock
        self.place = place
        self.hello: Hello | None = None
        self._file = sock.makefile("rb")
        self._closed = False

    @classmethod
    def connect(
        cls, place: MonitorPlace, timeout: float = CONNECT_DEADLINE
    ) -> MonitorConnection | None:
        """A connection to the place's monitor, or None when none runs or its socket refuses
        (not answering yet is found by `handshake`, under its own deadline)."""
        if not place.running() or place.socket_path_problem() is not None:
            return None
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        sock.settimeout(timeout)
        try:
            sock.connect(str(place.socket))
        except OSError:  # gone, refused, not bound yet, or its backlog full past the deadline
            sock.close()
            return None
        return cls(sock, place)

    def handshake(self, timeout: float = CONNECT_DEADLINE) -> Hello:
        """Read the monitor's hello within `timeout` (MonitorUnavailable otherwise)."""
        item = self._next(timeout)
        if item is None:
            raise MonitorUnavailable(f"the monitor closed {self.place.socket} before saying hello")
        if not isinstance(item, Hello):
            raise MonitorUnavailable("the monitor's socket did not start with a hello")
        if item.protocol != PROTOCOL:
            raise MonitorUnavailable(
                f"the monitor (pid {item.pid}) speaks protocol {item.protocol}, this console "
                f"{PROTOCOL}: restart it from this version"
            )
        self.hello = item
        return item

    def _next(self, timeout: float) -> FleetSnapshot | Hello | None:
        """The next line decoded, None at the end; MonitorUnavailable when nothing came within
        `timeout`, or what came is not the protocol's."""
        try:
            self.sock.settimeout(timeout)
            raw = self._file.readline(MAX_LINE)
        except TimeoutError:
            raise MonitorUnavailable(
                f"the monitor sent nothing for {fmt_seconds(timeout)} on {self.place.socket}"
            ) from None
        except (OSError, ValueError) as exc:  # closed under us (the console stopping)
            if self._closed:
                return None
            raise MonitorUnavailable(f"the monitor's socket failed: {exc}") from None
        if not raw:
            return None
        if not raw.endswith(b"\n"):
            raise MonitorUnavailable("the monitor sent a line that does not end")
        try:
            return read_line(raw)
        except ProtocolError as exc:
            raise MonitorUnavailable(f"the monitor sent an unreadable line: {exc}") from None

    def rounds(self, idle_timeout: float) -> Iterator[FleetSnapshot]:
        """Each snapshot the monitor sends until it closes the session (blocks; a worker
        thread). MonitorUnavailable when it goes silent for `idle_timeout` or sends garbage."""
        while True:
            item = self._next(idle_timeout)
            if item is None:
                return
            if isinstance(item, FleetSnapshot):
                yield item

    def poke(self) -> None:
        """Ask for a round now; never blocks (safe on an event loop)."""
        with contextlib.suppress(OSError):
            self.sock.send(b"\n", socket.MSG_DONTWAIT)

    def close(self) -> None:
        """End the session; a thread blocked reading it sees the end at once."""
        self._closed = True
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self.sock.close()


def attach(config: FleetConfig, timeout: float = CONNECT_DEADLINE) -> MonitorConnection | None:
    """A session with the fleet file's running monitor, its hello read; None when no monitor
    runs or it did not answer within `timeout`."""
    conn = MonitorConnection.connect(MonitorPlace.for_config(config), timeout)
    if conn is None:
        return None
    try:
        conn.handshake(timeout)
    except MonitorUnavailable:
        conn.close()
        return None
    return conn


class MonitorStatus(Struct, frozen=True):
    """Whether a fleet file's monitor runs, and how old its latest snapshot is."""

    place: MonitorPlace
    running: bool
    holder: Holder | None = None
    hello: Hello | None = None
    error: str | None = None  # it runs but did not answer as it should

    def snapshot_age(self, now: float | None = None) -> float | None:
        """Seconds since the monitor's latest snapshot (None: no answer, or no round yet)."""
        return age_of(self.hello.latest_taken_at if self.hello else None, now)

    def line(self, now: float | None = None) -> str:
        """One line for people."""
        if not self.running:
            return "monitor: not running (`rocmtui monitor` starts one)"
        who = describe_holder(self.place, self.holder)
        if self.error:
            return f"monitor: running ({who}) but not answering: {self.error}"
        age = self.snapshot_age(now)
        said = "no probe round yet" if age is None else f"its snapshot is {fmt_seconds(age)} old"
        return f"monitor: running ({who}); {said}"

    def to_json(self, now: float | None = None) -> dict[str, Any]:
        """For `rocmtui status --json`: pid and metrics as the monitor says them in its hello,
        else as its lock does."""
        age = self.snapshot_age(now)
        said = self.hello or self.holder
        view = MonitorView(
            running=self.running,
            pid=said.pid if said else None,
            socket=str(self.place.socket),
            metrics=said.metrics if said else None,
            snapshot_age=None if age is None else round(age, 3),
            error=self.error,
        )
        data: dict[str, Any] = json.decode(json.encode(view))
        return data


class MonitorView(Struct, frozen=True, kw_only=True):
    """`MonitorStatus` as `rocmtui status --json` prints it under `monitor`."""

    running: bool
    pid: int | None
    socket: str
    metrics: str | None
    snapshot_age: float | None
    error: str | None


def query(config: FleetConfig, timeout: float = CONNECT_DEADLINE) -> MonitorStatus:
    """Is the fleet file's monitor running, and how old is its snapshot (within `timeout`)?"""
    place = MonitorPlace.for_config(config)
    if not place.running():
        return MonitorStatus(place, running=False)
    holder = place.holder()
    started = time.monotonic()
    conn = MonitorConnection.connect(place, timeout)
    if conn is None:
        return MonitorStatus(place, True, holder, error=f"{place.socket} refused a connection")
    try:
        hello = conn.handshake(max(0.05, timeout - (time.monotonic() - started)))
    except MonitorUnavailable as exc:
        return MonitorStatus(place, True, holder, error=str(exc))
    finally:
        conn.close()
    return MonitorStatus(place, True, holder, hello)
