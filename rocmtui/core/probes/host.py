"""The local host's CPU, memory, load and disk (psutil), for nodes with `local = true`.

CPU percent is the whole host's use over a window: `prime()` (each round calls it) opens one
if none is open, and a reading closes it and opens the next, so in the monitor each reading
covers the time since the previous one (a refresh period). A window shorter than `MIN_WINDOW`
gives no new figure (the previous one, or None before the first): over a few milliseconds
the kernel's 100 Hz ticks make it 0, 50 or 100% on two cores, and the probe round's own work
is most of it. One-shot `rocmtui status` therefore reports None rather than a coin toss (its
load averages are there). psutil keeps this window per process; nothing else here calls
`psutil.cpu_percent`. The disk figure is taken with `statvfs`, which can hang on a dead
network mount, so it runs through the abandonable `ThreadGate` like the engine probes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from pathlib import Path

import psutil

from rocmtui.core.probes._common import Stuck, ThreadGate
from rocmtui.core.snapshots import HostStats


def _existing(path: Path) -> Path:
    """`path`, or its nearest existing parent (the state dir may not exist yet)."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return Path("/")


def sample(disk_path: Path, cpu_percent: float | None) -> HostStats:
    """Blocking: one reading of memory, load and the disk holding `disk_path`."""
    disk_path = _existing(disk_path)
    mem = psutil.virtual_memory()
    disk = psutil.disk_usage(str(disk_path))
    load1, load5, load15 = os.getloadavg()
    return HostStats(
        cpu_percent=cpu_percent,
        cpu_count=psutil.cpu_count() or 1,
        mem_percent=float(mem.percent),
        mem_used=int(mem.total - mem.available),
        mem_total=int(mem.total),
        load1=load1,
        load5=load5,
        load15=load15,
        disk_path=str(disk_path),
        disk_percent=float(disk.percent),
        disk_free=int(disk.free),
    )


class HostProber:
    """Host readings for local nodes, shared by every node of a round that asks together."""

    SHARE_SECONDS = 0.5  # readings this fresh are reused rather than taken again
    MIN_WINDOW = 0.5  # seconds: a CPU window shorter than this gives no new figure

    def __init__(self, gate: ThreadGate | None = None) -> None:
        self.gate = gate or ThreadGate()
        self._window: float | None = None  # monotonic start of the open CPU window
        self._cpu: float | None = None  # the last figure
        self._readings: dict[str, tuple[float, HostStats]] = {}
        self._pending: dict[str, asyncio.Future[HostStats | None]] = {}

    def prime(self) -> None:
        """Open the CPU-percent window unless one is open (cheap: reads /proc/stat)."""
        if self._window is None:
            psutil.cpu_percent(interval=None)
            self._window = time.monotonic()

    def _cpu_percent(self) -> float | None:
        """The host's CPU use over the open window, once it lasted `MIN_WINDOW`; before
        that the previous figure (None before the first)."""
        if self._window is None:
            self.prime()
        assert self._window is not None
        now = time.monotonic()
        if now - self._window >= self.MIN_WINDOW:
            self._cpu = float(psutil.cpu_percent(interval=None))
            self._window = now
        return self._cpu

    async def stats(self, disk_path: Path, deadline: float) -> HostStats | None:
        """A reading within `deadline` seconds, or None when the host did not answer."""
        key = str(disk_path)
        cached = self._readings.get(key)
        if cached and time.monotonic() - cached[0] <= self.SHARE_SECONDS:
            return cached[1]
        pending = self._pending.get(key)
        if (
            pending is None
            or pending.done()
            or pending.get_loop() is not asyncio.get_running_loop()
        ):
            pending = asyncio.ensure_future(self._take(disk_path, deadline))
            self._pending[key] = pending
        with contextlib.suppress(TimeoutError):
            return await asyncio.wait_for(asyncio.shield(pending), deadline)
        return None

    async def _take(self, disk_path: Path, deadline: float) -> HostStats | None:
        cpu = self._cpu_percent()
        try:
            reading = await self.gate.run(
                f"host:{disk_path}", lambda: sample(disk_path, cpu), deadline
            )
        except (Stuck, TimeoutError, OSError):
            return None
        self._readings[str(disk_path)] = (time.monotonic(), reading)
        return reading
