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
from pathlib import Path
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
        self._loop_lock = threading.Lock()
        self._progress = adapt.ProgressCache()
        self._bake: Any = None

    # ------------------------------------------------------------------ fleet probes

    def probe(self, previous: FleetSnapshot | None) -> FleetSnapshot:
        """One probe round of every node and both services (blocks up to the probe deadline).

        The probes are asyncio code; they run on a private loop in the calling worker thread so
        that their connection bookkeeping never stalls the UI loop (HAZARDS: speed traps).
        """
        from rocmtui.core.monitor import probe_fleet

        with self._loop_lock:
            if self._loop is None or self._loop.is_closed():
                self._loop = asyncio.new_event_loop()
            deadline = self.config.probe_deadline_seconds * 3 + 5
            coro = asyncio.wait_for(probe_fleet(self.config, previous=previous), deadline)
            result: FleetSnapshot = self._loop.run_until_complete(coro)
            return result

    def close(self) -> None:
        """Close the private probe loop (from the thread that used it, or after it ended)."""
        with self._loop_lock:
            if self._loop is not None and not self._loop.is_running():
                self._loop.close()
            self._loop = None

    # ------------------------------------------------------------------ bake file

    def load_bake(self) -> BakeView:
        """Targets, arches and the effective variables (with their sources)."""
        from rocmtui.core.bakefile import load_bake

        path = Path(self.config.bake_file)
        bake = load_bake(path)
        self._bake = bake
        try:
            from rocmtui.core.bakeprint import effective_variables

            variables = effective_variables(bake, self.env)
        except ImportError:
            variables = []
        return adapt.bake_view(path, bake, variables)

    def plan(self, target: str, arch: str, node: str, push: bool) -> BakePlan:
        """The exact command, and what `bake --print` resolves with that environment."""
        return adapt.plan(self.config, self._bake, target, arch, node, push, self.env)

    # ------------------------------------------------------------------ jobs

    def jobs(self, now: float | None = None) -> tuple[JobView, ...]:
        """Recent and running jobs of every operator, active ones with their progress."""
        return adapt.list_jobs(self.config, self._progress, time.time() if now is None else now)

    def launch(self, plan: BakePlan) -> JobView:
        """Start the plan detached through the core; refused in read-only mode."""
        if self.read_only:
            raise ReadOnlyError("read-only console: starting builds is disabled")
        return adapt.launch(self.config, self._bake, plan, self.env)

    def cancel(self, job_id: str) -> None:
        """Cancel a job through the core; refused in read-only mode."""
        if self.read_only:
            raise ReadOnlyError("read-only console: cancelling builds is disabled")
        adapt.cancel(self.config, job_id)


# A function that produces data for the screen: the signature workers call.
Fetch = Callable[[], object]
