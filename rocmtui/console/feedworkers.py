"""The fleet screen's feeds, each in a worker of its own: started, poked, stopped.

The fleet screen shows what the feeds report; running them is a job of its own: the monitor's
loop at once, the job store's after the first frame, the bake file once (after the first round
is drawn, or after `BAKE_DELAY`), each in a named worker of the screen so that a worker that
dies shows on the panel it feeds (`FleetScreen.on_worker_state_changed`).
"""

from __future__ import annotations

from collections.abc import Callable

from textual.screen import Screen

from rocmtui.console.backend.access import FleetBackend
from rocmtui.console.backend.refresh import Feeds
from rocmtui.console.backend.userthreads import run_on_own_thread

BAKE_DELAY = 2.0  # s: the bake file is read by then even if no probe round came back


class FeedWorkers:
    """The feeds of one screen, run in that screen's workers (nothing runs before `start`)."""

    def __init__(self, screen: Screen[None], backend: FleetBackend) -> None:
        self._screen = screen
        self.backend = backend
        self.feeds: Feeds | None = None
        #: The bake file has been asked for (it is read once).
        self.bake_requested = False

    def start(self) -> None:
        """Start the monitor's loop now, the job store's after the next frame, and the bake
        file's read by `BAKE_DELAY` at the latest; their messages go to the screen."""
        self.feeds = Feeds(self.backend, self._screen.post_message)
        # the bake file is parsed after the first round is on screen (or after BAKE_DELAY):
        # its parser holds the GIL ~0.1 s, which the first frame with fleet data waited for
        self._screen.set_timer(BAKE_DELAY, self.load_bake, name="bake-file-fallback")
        self._run_loop(self.feeds.fleet_loop, "fleet-monitor", "monitor")
        # the job store after the first frame: its imports (sqlite3 ...) and first read
        # in a thread took the GIL from the first frame with the round taken above
        self._screen.call_after_refresh(self._start_jobs_loop)

    def _start_jobs_loop(self) -> None:
        """The job store's loop, unless the feeds were stopped meanwhile."""
        if self.feeds is not None and not self.feeds.stopping.is_set():
            self._run_loop(self.feeds.jobs_loop, "job-store", "jobs")

    def _run_loop(self, loop: Callable[[], None], name: str, group: str) -> None:
        """One feed's loop in a named thread worker of its own, never two at once."""
        self._screen.run_worker(
            loop, name=name, group=group, thread=True, exclusive=True, exit_on_error=False
        )

    def load_bake(self) -> None:
        """Read the bake file once, on a thread of its own (the variables panel fills when it
        is read): a `b` pressed before then waits for it, never behind the views' pool."""
        if self.bake_requested or self.feeds is None:
            return
        self.bake_requested = True
        self._screen.run_worker(
            run_on_own_thread(self.feeds.load_bake, name="bake-file", daemon=True),
            name="bake-file",
            group="bake",
            exit_on_error=False,
        )

    def stop(self) -> None:
        """Ask the probe and job loops to end (they finish their current round)."""
        if self.feeds is not None:
            self.feeds.stop()

    def poke(self) -> None:
        """Probe and re-read the job store now."""
        if self.feeds is not None:
            self.feeds.poke()

    def poke_jobs(self) -> None:
        """Re-read the job store now (the probes keep their pace)."""
        if self.feeds is not None:
            self.feeds.poke_jobs()
