"""The console's only door to the core: blocking calls, run by the screen in named workers.

Every method here may block (probes, the job store, `bake --print`); none may be called on the
event loop. Results come back as the frozen views of `rocmtui.app.model`, so the widgets never
depend on the exact shape of the core's records. Read-only mode is enforced here, where the
actions are carried out, not only by hiding keys.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from rocmtui.app import adapt
from rocmtui.app.jobextras import JobExtras
from rocmtui.app.model import BakePlan, BakeView, JobView
from rocmtui.core.config import FleetConfig
from rocmtui.core.snapshots import FleetSnapshot


class ReadOnlyError(PermissionError):
    """A dangerous action was asked of a read-only console."""


class MonitorFailed(RuntimeError):
    """The monitor process ended, or sent a line that is not a round (worded for the panel)."""

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
        self._child: subprocess.Popen[bytes] | None = None
        self._first: _FirstRound | None = None
        self._watched: frozenset[str] = frozenset()
        self._stopped = False
        self._lock = threading.Lock()
        self._progress = adapt.ProgressCache()
        self._extras = JobExtras()
        self._bake: Any = None

    # ------------------------------------------------------------------ fleet probes

    def adopt_monitor(self, child: subprocess.Popen[bytes]) -> None:
        """Use a monitor process started early (before Textual was imported), and start reading
        its first round now, so that the first frame can show it (`take_first_round`)."""
        self._child = child
        self._first = _FirstRound(child)

    def take_first_round(self) -> FleetSnapshot | None:
        """The adopted monitor's first round if it has already come (never waits); a round
        taken here is not relayed again by `run_monitor`."""
        with self._lock:
            first = self._first
            if first is None or not first.done.is_set():
                return None
            if not isinstance(first.item, FleetSnapshot):
                return None
            first.taken = True
            return first.item

    def run_monitor(self, publish: Callable[[FleetSnapshot], object]) -> None:
        """Relay the monitor process's rounds until `stop_monitor()`; blocks (a worker thread).

        The core's FleetMonitor runs in a child (rocmtui.app.probeproc) so that probing never
        holds the GIL the event loop needs; this thread only reads lines from a pipe.
        """
        from rocmtui.app import probeproc

        with self._lock:
            if self._stopped:
                return
            if self._child is None or self._child.poll() is not None:
                self._child = probeproc.start(self.config.source)
            child = self._child
        items: Iterable[FleetSnapshot | str] = probeproc.rounds(child)
        first = self._first
        if first is not None and first.child is child:
            first.done.wait()  # its reader owns the pipe until the first line is read
            with self._lock:
                self._first = None
            if first.item is not None and not first.taken:  # None: the output had ended
                items = itertools.chain([first.item], items)
        for item in items:
            if self._stopped:
                return
            if isinstance(item, str):
                raise MonitorFailed(item)
            publish(item)
        if not self._stopped:
            raise MonitorFailed.ended(child.wait())

    def refresh_now(self) -> None:
        """Ask the monitor for a round now (thread-safe)."""
        from rocmtui.app import probeproc

        with self._lock:
            if self._child is not None:
                probeproc.poke(self._child)

    def stop_monitor(self) -> None:
        """End the monitor process without waiting for it (safe on the event loop)."""
        with self._lock:
            self._stopped = True
            child = self._child
        if child is not None and child.poll() is None:
            with contextlib.suppress(OSError, ValueError):
                if child.stdin is not None:
                    child.stdin.close()  # it would end after its round; do not wait for that
            child.terminate()

    # ------------------------------------------------------------------ bake file

    def load_bake(self) -> BakeView:
        """Targets, arches and the effective variables (resolved by bake, with their sources)."""
        from rocmtui.core.bakefile import load_bake
        from rocmtui.core.bakefind import check_found

        check_found(self.config)
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
            from rocmtui.core.bakefind import check_found

            check_found(self.config)
            self._bake = load_bake(self.config.bake_file)
        return self._bake

    # ------------------------------------------------------------------ jobs

    def jobs(self, now: float | None = None) -> tuple[JobView, ...]:
        """Recent and running jobs of every operator, with progress for the active ones and
        the watched ones (`watch_progress`)."""
        now = time.time() if now is None else now
        return adapt.list_jobs(self.config, self._progress, now, self._watched, self._extras)

    def watch_progress(self, job_ids: Iterable[str]) -> None:
        """Jobs whose progress is wanted whether or not they still run (open log panes)."""
        self._watched = frozenset(job_ids)  # one assignment: safe beside the jobs thread

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


class _FirstRound:
    """Reads a monitor child's first round in a daemon thread, while Textual starts."""

    def __init__(self, child: subprocess.Popen[bytes]) -> None:
        self.child = child
        self.item: FleetSnapshot | str | None = None  # None: the child's output ended first
        self.taken = False
        self.done = threading.Event()
        threading.Thread(target=self._read, name="first-round", daemon=True).start()

    def _read(self) -> None:
        from rocmtui.app import probeproc

        try:
            self.item = next(probeproc.rounds(self.child), None)
        except (OSError, ValueError) as exc:  # the pipe was closed under it (console stopping)
            self.item = f"fleet monitor: {exc}"
        finally:
            self.done.set()
