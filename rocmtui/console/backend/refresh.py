"""The loops that feed the fleet screen: each runs in a named thread worker and posts messages.

A loop never touches widgets. It sleeps on an Event so a "refresh now" or shutdown wakes it at
once, never overlaps its own rounds (one worker per feed, `exclusive=True`), and turns each
failure into a `PanelFailed` for the panel it feeds; the next round tries again, backing off.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from textual.message import Message
from textual.worker import get_current_worker

from rocmtui.console.backend.access import FleetBackend, MonitorGone
from rocmtui.console.backend.views import BakeView
from rocmtui.console.messages import (
    BakeLoaded,
    FleetUpdated,
    JobsUpdated,
    PanelFailed,
    ProbeSourceChanged,
)
from rocmtui.core.retry import backoff
from rocmtui.core.snapshots import FleetSnapshot
from rocmtui.core.text.units import fmt_age

Post = Callable[[Message], object]


def failure_text(exc: BaseException) -> str:
    """One line for a failure, as the operator should read it. rocmtui's own errors are
    worded for the operator already; anything else keeps its type's name, so that the
    unexpected can be recognised (`OperationalError: database is locked`)."""
    if isinstance(exc, TimeoutError):
        return "timed out"
    if isinstance(exc, ImportError):
        return f"not available in this build: {exc.name or exc}"
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    if first and type(exc).__module__.startswith("rocmtui."):
        return first
    return f"{type(exc).__name__}: {first}".rstrip(": ")


class Feeds:
    """Owns the wake-up event and the loops; the screen starts them as workers."""

    def __init__(self, backend: FleetBackend, post: Post) -> None:
        self.backend = backend
        self.post = post
        self.wake = threading.Event()
        self.stopping = threading.Event()

    def poke(self) -> None:
        """Run every loop's next round now."""
        self.wake.set()
        self.backend.refresh_now()

    def poke_jobs(self) -> None:
        """Re-read the job store now (the probes keep their pace)."""
        self.wake.set()

    def stop(self) -> None:
        """Ask every loop to end (the workers are also cancelled by the screen)."""
        self.stopping.set()
        self.wake.set()
        self.backend.stop_monitor()

    def _sleep(self, seconds: float) -> bool:
        """Wait for the next round; False when the loop should end."""
        worker = get_current_worker()
        deadline = time.monotonic() + seconds
        while not (self.stopping.is_set() or worker.is_cancelled):
            left = deadline - time.monotonic()
            if left <= 0:
                return True
            if self.wake.wait(min(left, 0.5)):
                self.wake.clear()
                return True
        return False

    def fleet_loop(self) -> None:
        """The core's monitor (the host's, or a process of our own): each round as it comes.
        If the host's monitor goes, the screen is told and our own process takes over at once.
        If our own process dies, the nodes and services panels say so and when it is started
        again, backing off while it keeps failing before its first round (a process that had
        been sending rounds is started again after one refresh, however often it failed long
        before)."""
        failures = 0

        def source(kind: str, detail: str) -> None:
            self.post(ProbeSourceChanged(kind, detail))

        while not self.stopping.is_set():
            delivered = False

            def publish(snapshot: FleetSnapshot) -> None:
                nonlocal delivered
                delivered = True
                self.post(FleetUpdated(snapshot))

            try:
                self.backend.run_monitor(publish, source)
                return  # stopped
            except MonitorGone as exc:
                self.post(ProbeSourceChanged("lost", failure_text(exc)))
                continue
            except Exception as exc:
                failures = 1 if delivered else failures + 1
                delay = backoff(self.backend.config.refresh_seconds, failures)
                said = f"fleet monitor: {failure_text(exc)}; starting it again in {fmt_age(delay)}"
                for panel in ("nodes", "services"):
                    self.post(PanelFailed(panel, said))
            if not self._sleep(delay):
                return

    def jobs_loop(self) -> None:
        """Re-read the job store (and the active jobs' progress) every refresh."""
        refresh = self.backend.config.refresh_seconds
        failures = 0
        while not self.stopping.is_set():
            started = time.monotonic()
            crossing: float | None = None
            try:
                jobs = self.backend.jobs()
                self.post(JobsUpdated(jobs))
                crossing = self.backend.next_verdict_in(jobs)
                failures = 0
            except Exception as exc:
                failures += 1
                self.post(PanelFailed("jobs", f"job store: {failure_text(exc)}"))
            wait = backoff(refresh, failures)
            if crossing is not None:  # a silence passes the threshold sooner: judge it then
                wait = min(wait, crossing + (time.monotonic() - started))
            if not self._sleep(max(0.0, wait - (time.monotonic() - started))):
                break

    def load_bake(self) -> None:
        """Read the bake file once (the variables panel shows why if it cannot)."""
        try:
            self.post(BakeLoaded(self.backend.load_bake()))
        except Exception as exc:
            # on first use: kept off the console's start
            from rocmtui.core.bake.file import BakeError

            path = self.backend.config.bake_file
            said = failure_text(exc)  # the bake file's own errors name it, and the line
            named = isinstance(exc, BakeError) or str(path) in said
            error = said if named else f"{path.name}: {said}"
            self.post(BakeLoaded(BakeView(path=path, error=error)))
