"""The console's only door to the core: blocking calls, run by the screen in named workers.

Every method here may block (probes, the job store, `bake --print`); none may be called on the
event loop. Results come back as the frozen views of `rocmtui.app.model`, so the widgets never
depend on the exact shape of the core's records. Read-only mode is enforced here, where the
actions are carried out, not only by hiding keys.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from rocmtui.app import adapt
from rocmtui.app.model import BakePlan, BakeView, JobView
from rocmtui.core.config import FleetConfig
from rocmtui.core.snapshots import FleetSnapshot


class ReadOnlyError(PermissionError):
    """A dangerous action was asked of a read-only console."""


class FleetBackend:
    """Blocking access to probes, the bake file, and jobs for one fleet file."""

    def __init__(
        self,
        config: FleetConfig,
        read_only: bool = False,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.config = config
        self.read_only = read_only or config.read_only
        self.env = dict(os.environ if env is None else env)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._monitor: Any = None
        self._stopped = False
        self._loop_lock = threading.Lock()
        self._progress = adapt.ProgressCache()
        self._bake: Any = None

    # ------------------------------------------------------------------ fleet probes

    def run_monitor(self, publish: Callable[[FleetSnapshot], object]) -> None:
        """Run the core's FleetMonitor until `stop_monitor()`; blocks (a worker thread).

        The probes are asyncio code; they run on a private loop in this worker thread so that
        their connection bookkeeping never stalls the UI loop (HAZARDS: speed traps).
        """
        from rocmtui.core.monitor import FleetMonitor

        loop = asyncio.new_event_loop()

        def publish_none(snapshot: FleetSnapshot) -> None:
            publish(snapshot)

        monitor = FleetMonitor(self.config, publish_none)
        with self._loop_lock:
            if self._stopped:
                loop.close()
                return
            self._loop, self._monitor = loop, monitor
        try:
            loop.run_until_complete(monitor.run())
        finally:
            with self._loop_lock:
                self._loop = self._monitor = None
            loop.close()

    def refresh_now(self) -> None:
        """Ask the monitor for a round now (thread-safe)."""
        with self._loop_lock:
            if self._loop is not None and self._monitor is not None:
                self._loop.call_soon_threadsafe(self._monitor.request_refresh)

    def stop_monitor(self) -> None:
        """Ask the monitor to return after its current round (thread-safe)."""
        with self._loop_lock:
            self._stopped = True
            if self._loop is not None and self._monitor is not None:
                self._loop.call_soon_threadsafe(self._monitor.stop)

    # ------------------------------------------------------------------ bake file

    def load_bake(self) -> BakeView:
        """Targets, arches and the effective variables (resolved by bake, with their sources)."""
        from rocmtui.core.bakefile import load_bake

        bake = load_bake(self.config.bake_file)
        self._bake = bake
        return adapt.bake_view(self.config, bake, self.env)

    def plan(self, target: str, arch: str, node: str, push: bool) -> BakePlan:
        """The exact command, and what `bake --print` resolves with that environment."""
        return adapt.plan(self.config, self.bake(), target, arch, node, push, self.env)

    def bake(self) -> Any:
        """The loaded bake file (loaded now if the panel has not done it yet)."""
        if self._bake is None:
            from rocmtui.core.bakefile import load_bake

            self._bake = load_bake(self.config.bake_file)
        return self._bake

    # ------------------------------------------------------------------ jobs

    def jobs(self, now: float | None = None) -> tuple[JobView, ...]:
        """Recent and running jobs of every operator, active ones with their progress."""
        return adapt.list_jobs(self.config, self._progress, time.time() if now is None else now)

    def launch(self, plan: BakePlan) -> JobView:
        """Start the plan detached through the core; refused in read-only mode."""
        if self.read_only:
            raise ReadOnlyError("read-only console: starting builds is disabled")
        return adapt.launch(self.config, self.bake(), plan, self.env)

    def cancel(self, job_id: str) -> None:
        """Cancel a job through the core; refused in read-only mode."""
        if self.read_only:
            raise ReadOnlyError("read-only console: cancelling builds is disabled")
        adapt.cancel(self.config, job_id)
