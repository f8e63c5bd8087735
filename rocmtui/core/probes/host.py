"""The local host's CPU, memory, load and disk (psutil), for nodes with `local = true`.

CPU percent is measured between two calls: `prime()` at the start of a round (and, in the
monitor, the previous round) marks the start, so one-shot `rocmtui status` reports the CPU
use during its own probe round instead of psutil's meaningless first 0.0. The disk figure is
taken with `statvfs`, which can hang on a dead network mount, so it runs through the
abandonable `ThreadGate` like the engine probes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from pathlib import Path

from rocmtui.core.probes._common import Stuck, ThreadGate
from rocmtui.core.snapshots import HostStats


def _existing(path: Path) -> Path:
    """`path`, or its nearest existing parent (the state dir may not exist yet)."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return Path("/")


def sample(disk_path: Path, cpu_percent: float) -> HostStats:
    """Blocking: one reading of memory, load and the disk holding `disk_path`."""
    import psutil

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

    def __init__(self, gate: ThreadGate | None = None) -> None:
        self.gate = gate or ThreadGate()
        self._primed = False
        self._cpu: tuple[float, float] = (-1e18, 0.0)  # (monotonic, percent)
        self._readings: dict[str, tuple[float, HostStats]] = {}
        self._pending: dict[str, asyncio.Future[HostStats | None]] = {}

    def prime(self) -> None:
        """Start the CPU-percent window (cheap: reads /proc/stat)."""
        import psutil

        psutil.cpu_percent(interval=None)
        self._primed = True

    def _cpu_percent(self) -> float:
        import psutil

        if not self._primed:
            self.prime()
        at, value = self._cpu
        if time.monotonic() - at > self.SHARE_SECONDS:
            value = float(psutil.cpu_percent(interval=None))
            self._cpu = (time.monotonic(), value)
        return value

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
