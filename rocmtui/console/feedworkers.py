"""The fleet screen's feeds, each in a worker of its own: started, poked, stopped.

The fleet screen shows what the feeds report; running them is a job of its own: the monitor's
loop at once, the job store's after the first frame, the bake file once (after the first round
is drawn, or after `BAKE_DELAY`), each in a named worker of the screen so that a worker that
dies shows on the panel it feeds (`FleetScreen.on_worker_state_changed`).
"""

from __future__ import annotations

BAKE_DELAY = 2.0  # s: the bake file is read by then even if no probe round came back


class FeedWorkers:
    def start(self) -> None:
        self.feeds = Feeds(self.backend, self.post_message)
        # the bake file is parsed after the first round is on screen (or after BAKE_DELAY):
        # its parser holds the GIL ~0.1 s, which the first frame with fleet data waited for
        self.set_timer(BAKE_DELAY, self.load_bake, name="bake-file-fallback")
        self._run_loop(self.feeds.fleet_loop, "fleet-monitor", "monitor")
        # the job store after the first frame: its imports (sqlite3 ...) and first read
        # in a thread took the GIL from the first frame with the round taken above
        self.call_after_refresh(self._start_jobs_loop)

    def _start_jobs_loop(self) -> None:
        if self.feeds is not None and not self.feeds.stopping.is_set():
            self._run_loop(self.feeds.jobs_loop, "job-store", "jobs")

    def _run_loop(self, loop: Callable[[], None], name: str, group: str) -> None:
        """One feed's loop in a named thread worker of its own, never two at once."""
        self.run_worker(
            loop, name=name, group=group, thread=True, exclusive=True, exit_on_error=False
        )

    def load_bake(self) -> None:
        """Read the bake file once, on a thread of its own (the variables panel fills when it
        is read): a `b` pressed before then waits for it, never behind the views' pool."""
        if self._bake_requested or self.feeds is None:
            return
        self._bake_requested = True
        self.run_worker(
            run_on_own_thread(self.feeds.load_bake, name="bake-file", daemon=True),
            name="bake-file",
            group="bake",
            exit_on_error=False,
        )

    def stop_feeds(self) -> None:
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
